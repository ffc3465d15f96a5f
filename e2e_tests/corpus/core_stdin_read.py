# Reading stdin gives nothing, in every way there is.
import os, sys, select
print(repr(sys.stdin.read()), repr(sys.stdin.readline()), sys.stdin.readlines())
print(repr(os.read(0, 10)), repr(sys.stdin.buffer.read()))
print(select.select([sys.stdin], [], [], 0)[0] == [sys.stdin])
for line in sys.stdin:
    print("line", line)
print(os.isatty(0), os.path.exists("/dev/stdin"))
