# packages: numpy
import numpy as np, os
a = np.arange(6, dtype=np.float64).reshape(2, 3)
np.save("a.npy", a)
np.savetxt("a.txt", a, fmt="%.1f")
np.savez_compressed("a.npz", a=a, b=a * 2)
print(np.load("a.npy"), open("a.txt").read(), sorted(np.load("a.npz").files))
print(os.path.getsize("a.npy"))
