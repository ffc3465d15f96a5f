# An uncaught KeyboardInterrupt prints its traceback and dies of SIGINT.
print("working")
raise KeyboardInterrupt
