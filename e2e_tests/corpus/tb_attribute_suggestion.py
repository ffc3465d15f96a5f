# 3.10+ suggests names for typos.
class Point:
    def __init__(self):
        self.x_coord = 1
p = Point()
print(p.x_cord)
