# packages: matplotlib
import matplotlib, os
print(matplotlib.get_configdir() == os.path.join(os.environ["HOME"], ".config", "matplotlib"))
print(matplotlib.get_cachedir() == os.path.join(os.environ["HOME"], ".cache", "matplotlib"))
print(matplotlib.matplotlib_fname())
print(matplotlib.rcParams["font.family"], matplotlib.rcParams["figure.dpi"], matplotlib.rcParams["savefig.format"])
matplotlib.rcParams.update({"lines.linewidth": 3})
print(matplotlib.rcParams["lines.linewidth"], matplotlib.rcParamsDefault["lines.linewidth"])
