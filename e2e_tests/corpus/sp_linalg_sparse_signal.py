# packages: scipy numpy
import numpy as np
from scipy import linalg, sparse, signal, spatial
print(np.round(linalg.expm(np.zeros((2, 2))), 6))
m = sparse.csr_matrix(np.eye(3))
print(m.nnz, (m @ np.ones(3)).tolist())
b, a = signal.butter(2, 0.3)
print(np.round(b, 6), np.round(a, 6))
print(np.round(spatial.distance.cdist([[0, 0]], [[3, 4]]), 6))
