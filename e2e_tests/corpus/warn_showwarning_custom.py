import sys, warnings
def show(message, category, filename, lineno, file=None, line=None):
    print(f"WARN {category.__name__}: {message} @ line {lineno}", file=sys.stderr)
warnings.showwarning = show
warnings.warn("routed")
