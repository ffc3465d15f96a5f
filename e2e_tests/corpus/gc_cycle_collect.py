import gc
class Node:
    def __init__(self):
        self.other = None
a, b = Node(), Node()
a.other, b.other = b, a
del a, b
print(gc.collect() >= 2)
print(gc.isenabled(), gc.get_threshold())
print(gc.get_debug())
