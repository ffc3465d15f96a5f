# A module the script never imported is imported fresh, with its state as python3 gives it.
import importlib
m = importlib.import_module("colorsys")
print(m.rgb_to_hsv(1, 0, 0))
import sched, calendar
print(calendar.firstweekday(), calendar.month_abbr[1])
