# packages: scikit-learn numpy
# KMeans without n_init warns in scikit-learn 1.2 (FutureWarning), pointing into sklearn.
import numpy as np
from sklearn.cluster import KMeans
X = np.array([[0, 0], [0, 1], [10, 10], [10, 11]])
km = KMeans(n_clusters=2, random_state=0).fit(X)
print(sorted(np.bincount(km.labels_)))
