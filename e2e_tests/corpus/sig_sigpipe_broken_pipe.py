# SIGPIPE is ignored: writing to a closed pipe raises BrokenPipeError.
import os
r, w = os.pipe()
os.close(r)
try:
    os.write(w, b"x")
except BrokenPipeError as e:
    print("BrokenPipeError", e.errno)
