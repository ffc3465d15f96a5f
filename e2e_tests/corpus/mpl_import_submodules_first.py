# packages: matplotlib
import matplotlib.colors as c
import matplotlib.cm as cm
import matplotlib
print(matplotlib.colors is c, matplotlib.cm is cm)
import matplotlib.pyplot as plt
fig = plt.figure()
print(type(fig).__name__, plt.get_cmap("plasma").name)
