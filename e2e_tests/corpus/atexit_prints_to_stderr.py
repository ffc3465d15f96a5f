import atexit, sys
atexit.register(lambda: sys.stderr.write("goodbye on stderr\n"))
atexit.register(lambda: sys.stdout.write("goodbye on stdout (unterminated)"))
