# os._exit skips flushing: what reached the pipe depends on the buffer, as in python3.
import os, sys
print("flushed", flush=True)
sys.stdout.write("a" * 5000)
sys.stdout.write("never flushed tail")
print("stderr is line buffered", file=sys.stderr)
sys.stderr.write("partial stderr line")
os._exit(0)
