# A fresh script's own objects: counts that do not depend on the interpreter's warm-up.
import gc
before = gc.get_count()
junk = [[i] for i in range(1000)]
print(isinstance(gc.get_count(), tuple), len(gc.get_referrers(junk[0])) >= 1)
print(gc.is_tracked(junk), gc.is_tracked(1))
