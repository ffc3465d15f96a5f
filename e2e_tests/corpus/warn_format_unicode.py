import warnings
warnings.warn("données « manquantes » ✗")
