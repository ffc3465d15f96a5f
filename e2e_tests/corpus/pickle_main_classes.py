# Classes and functions of __main__ pickle by reference to __main__.
import pickle, copy
class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y
    def __repr__(self):
        return f"Point({self.x}, {self.y})"
def area(p):
    return p.x * p.y
data = pickle.dumps({"p": Point(2, 3), "f": area}, protocol=pickle.HIGHEST_PROTOCOL)
print(b"__main__" in data, pickle.HIGHEST_PROTOCOL, pickle.DEFAULT_PROTOCOL)
back = pickle.loads(data)
print(back["p"], back["f"](back["p"]), copy.deepcopy(back["p"]))
pickle.dumps(lambda: 1)
