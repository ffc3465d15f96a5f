import sys
class Finder:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name == "virtual_mod":
            import importlib.util
            return importlib.util.spec_from_loader(name, Loader())
class Loader:
    def create_module(self, spec): return None
    def exec_module(self, module): module.ANSWER = 42
sys.meta_path.append(Finder)
import virtual_mod
print(virtual_mod.ANSWER)
