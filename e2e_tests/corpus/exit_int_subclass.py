# An int subclass is an int.
class Code(int):
    def __str__(self):
        return "should not be printed"
raise SystemExit(Code(9))
