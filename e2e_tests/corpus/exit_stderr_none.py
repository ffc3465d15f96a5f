# With sys.stderr set to None, the message still reaches file descriptor 2.
import sys
sys.stderr = None
sys.exit("message on fd 2")
