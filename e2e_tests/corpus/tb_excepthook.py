# A custom sys.excepthook replaces the default report.
import sys
def hook(kind, value, tb):
    print(f"custom hook: {kind.__name__}: {value} (line {tb.tb_lineno})", file=sys.stderr)
sys.excepthook = hook
raise OSError("disk on fire")
