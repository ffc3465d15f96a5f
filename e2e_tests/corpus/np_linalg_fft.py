# packages: numpy
import numpy as np
m = np.array([[4.0, 1.0], [2.0, 3.0]])
vals, vecs = np.linalg.eig(m)
print(np.sort(vals).round(6), np.linalg.det(m).round(6), np.linalg.inv(m).round(6))
print(np.linalg.solve(m, [1, 2]).round(6), np.linalg.norm(m).round(6))
print(np.fft.fft(np.array([1, 0, -1, 0])).round(6))
print(np.polyfit([0, 1, 2], [1, 3, 5], 1).round(6))
