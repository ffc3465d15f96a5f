# -*- coding: latin-1 -*-
# A coding declaration makes the same bytes valid.
print("café")
