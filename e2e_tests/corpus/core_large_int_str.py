# The int/str conversion limit is python3's default.
x = 10 ** 5000
try:
    s = str(x)
except ValueError as e:
    print("limited:", e)
print(len(hex(x)))
