# packages: scikit-learn numpy
import numpy as np
from sklearn.linear_model import LinearRegression, LogisticRegression
X = np.arange(10).reshape(-1, 1)
y = 3 * X.ravel() + 2
reg = LinearRegression().fit(X, y)
print(round(reg.coef_[0], 6), round(reg.intercept_, 6), round(reg.score(X, y), 6))
clf = LogisticRegression(max_iter=1000).fit(X, (y > 15).astype(int))
print(clf.predict([[1], [8]]))
