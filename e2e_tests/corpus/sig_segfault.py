# A segmentation fault kills the process: exit -11, buffered output lost.
import ctypes
print("before", flush=True)
print("buffered")
ctypes.string_at(0)
