# Tens of KB through stdout in many writes, and a long single line.
for i in range(3000):
    print(f"line {i:05d} " + "x" * (i % 17))
print("y" * 20000)
