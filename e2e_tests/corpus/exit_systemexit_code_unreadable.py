# A SystemExit whose code cannot be read: python3 prints the exception itself and exits 1.
class E(SystemExit):
    @property
    def code(self):
        raise ValueError("no code")


print("before")
raise E(7)
