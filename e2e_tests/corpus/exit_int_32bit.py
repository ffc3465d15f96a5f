# Codes past 32 bits are truncated to C int by CPython: 2**32 + 7 exits 7.
import sys
sys.exit(2 ** 32 + 7)
