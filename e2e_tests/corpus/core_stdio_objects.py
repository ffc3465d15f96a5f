# The standard streams look as they do in a non-interactive python3.
import sys
for s in (sys.stdin, sys.stdout, sys.stderr):
    print(repr(s), s.encoding, s.errors, s.line_buffering, s.write_through, s.isatty(), s.fileno())
    print(" ", repr(s.buffer), repr(s.buffer.raw), s.buffer.raw.closefd, s.mode, s.name)
print(sys.stdout is sys.__stdout__, sys.stderr is sys.__stderr__, sys.stdin is sys.__stdin__)
print(sys.stdout.newlines, sys.stdin.newlines)
