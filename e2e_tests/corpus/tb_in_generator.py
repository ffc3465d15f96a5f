def gen():
    yield 1
    yield from sub()
def sub():
    yield 2
    raise LookupError("inside generator")
for v in gen():
    print(v)
