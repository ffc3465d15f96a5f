s = "déjà vu"
print(s))
