# packages: scikit-learn
from sklearn.datasets import load_iris
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.metrics import accuracy_score
X, y = load_iris(return_X_y=True)
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
model = make_pipeline(StandardScaler(), SVC(random_state=0)).fit(Xtr, ytr)
print(X.shape, round(accuracy_score(yte, model.predict(Xte)), 4))
print(model)
