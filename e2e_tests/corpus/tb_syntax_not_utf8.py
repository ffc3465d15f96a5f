# Bytes that are not UTF-8 and no coding declaration.
print("café")
