# packages: scipy numpy
# scipy's warnings point at the script's lines.
import numpy as np
from scipy import stats, integrate
print(stats.pearsonr([1, 1, 1], [1, 2, 3]))
print(integrate.quad(lambda x: 1 / np.sqrt(abs(x)), -1, 1, limit=3)[0] > 0)
