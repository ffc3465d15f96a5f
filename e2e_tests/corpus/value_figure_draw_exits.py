# requires: matplotlib
# A figure left open is drawn by the server after the script (python3 with Agg never draws it):
# an artist whose draw raises SystemExit must change nothing of the output or the exit status.
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.artist import Artist


class Exits(Artist):
    def draw(self, renderer):
        raise SystemExit(4)


fig, ax = plt.subplots()
ax.plot([1, 2, 3])
ax.add_artist(Exits())
print("drawn later, if at all")
