# An exit object whose str() fails.
class Bad:
    def __str__(self):
        raise RuntimeError("no str")
raise SystemExit(Bad())
