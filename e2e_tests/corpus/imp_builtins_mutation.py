import builtins
builtins.print_original = builtins.print
def shout(*a, **k):
    builtins.print_original(*[str(x).upper() for x in a], **k)
builtins.print = shout
print("quiet words")
builtins.print = builtins.print_original
print("normal again")
