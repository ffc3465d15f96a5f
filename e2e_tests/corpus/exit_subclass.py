# A subclass of SystemExit is still an exit.
class Done(SystemExit):
    pass
print("done")
raise Done(6)
