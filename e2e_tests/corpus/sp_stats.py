# packages: scipy numpy
import numpy as np
from scipy import stats
print(round(stats.norm.cdf(1.96), 6), round(stats.norm.ppf(0.975), 6))
rng = np.random.default_rng(1)
a, b = rng.normal(0, 1, 50), rng.normal(0.5, 1, 50)
t = stats.ttest_ind(a, b)
print(round(t.statistic, 6), round(t.pvalue, 6))
print(stats.describe([1, 2, 3, 4, 5]))
print(round(stats.pearsonr([1, 2, 3, 4], [2, 4, 5, 9])[0], 6))
