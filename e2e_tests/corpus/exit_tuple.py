# Several arguments: the code is the tuple, printed.
raise SystemExit(1, "two")
