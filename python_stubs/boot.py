# Zygote boot stub: runs once inside the embedded interpreter before the zygote starts forking.
# (Filled in by the engine work.)
