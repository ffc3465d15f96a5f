# A syntax error at the end: nothing before it runs either.
print("not printed")
def ok():
    pass
return 5
