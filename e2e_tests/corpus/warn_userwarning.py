import warnings
print("before")
warnings.warn("something looks off")
warnings.warn("something looks off")  # shown once per location
for i in range(3):
    warnings.warn("in a loop")
print("after")
