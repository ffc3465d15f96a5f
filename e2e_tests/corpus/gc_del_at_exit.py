# Objects still alive at exit are finalized during interpreter shutdown, as in python3.
class Resource:
    def __init__(self, name):
        self.name = name
    def __del__(self):
        print("finalizing", self.name)
r = Resource("global")
print("end of script")
