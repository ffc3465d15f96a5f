# packages: scikit-learn
# n_jobs=2: joblib starts worker processes inside the run.
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
X, y = make_classification(n_samples=100, n_features=5, random_state=0)
rf = RandomForestClassifier(n_estimators=10, random_state=0, n_jobs=2).fit(X, y)
print(round(rf.score(X, y), 4), rf.n_features_in_)
