# A last expression of a dict or list subclass: python3 never converts it, so none of its
# methods may run for the server's JSON of it.
class LoudDict(dict):
    def items(self):
        print("items() called")
        return super().items()


class LoudList(list):
    def __iter__(self):
        print("iter called")
        return super().__iter__()


print([LoudList([1, 2]) is not None])
LoudDict(a=LoudList([1]))
