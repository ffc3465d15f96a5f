# packages: scikit-learn numpy
import numpy as np
from sklearn.tree import DecisionTreeClassifier, export_text
from sklearn.metrics import confusion_matrix, classification_report
X = np.array([[0], [1], [2], [3], [4], [5]])
y = np.array([0, 0, 0, 1, 1, 1])
tree = DecisionTreeClassifier(random_state=0).fit(X, y)
print(export_text(tree, feature_names=["x"]))
print(confusion_matrix(y, tree.predict(X)))
print(classification_report(y, tree.predict(X), digits=3))
