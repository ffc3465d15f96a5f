counter = 0
print(countr)
