# The last expression's value is the script's own object: python3 shows nothing for it, and the
# server's attempt to show it (its repr, its type's name, its exception's str) must change nothing
# of stdout, stderr or the exit status, whatever that code raises.
class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no str either")


class Meta(type):
    @property
    def __name__(cls):
        raise RuntimeError("no name")


class Nameless(Exception, metaclass=Meta):
    pass


class Value:
    def __init__(self, error):
        self.error = error

    @property
    def size(self):
        raise ValueError("no size")

    def __repr__(self):
        raise self.error


print("before")
Value(Unprintable()) if __name__ == "__main__" else None
print("between")
Value(Nameless())
