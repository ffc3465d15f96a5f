import sys
sys.stdout.reconfigure(errors="replace")
print("replaced: \udcff")
sys.stdout.reconfigure(line_buffering=True)
print(sys.stdout.line_buffering)
sys.stdout.reconfigure(encoding="latin-1")
print("café", sys.stdout.encoding)
