# Tracebacks printed by the script itself, then a normal end.
import traceback, sys
def broken():
    return {}["missing"]
try:
    broken()
except KeyError:
    traceback.print_exc()
    print("formatted:", "".join(traceback.format_exception_only(*sys.exc_info()[:2])).strip())
print(traceback.format_stack()[-1].splitlines()[0])
print("still running")
