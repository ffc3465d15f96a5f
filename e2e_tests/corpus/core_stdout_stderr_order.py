# stdout and stderr are separate streams; each keeps its own order.
import sys
for i in range(5):
    print("out", i)
    print("err", i, file=sys.stderr)
sys.stdout.write("no newline at the end")
