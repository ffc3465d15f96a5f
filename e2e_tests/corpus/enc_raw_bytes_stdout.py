# Bytes that are not UTF-8, written straight to stdout.
import sys
sys.stdout.buffer.write(b"valid \xc3\xa9 then invalid \xff\xfe and \xe2\x82 cut\n")
sys.stdout.flush()
