# packages: numpy
# A numpy deprecation triggered from __main__ is shown, as python3 shows it.
import numpy as np, warnings
warnings.simplefilter("default")
print(np.array([1, 2]).tostring() if hasattr(np.ndarray, "tostring") else b"")
print(np.find_common_type([np.float32], [np.int64]) if hasattr(np, "find_common_type") else None)
