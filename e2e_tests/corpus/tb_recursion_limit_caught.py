import sys
sys.setrecursionlimit(200)
def depth(n=0):
    try:
        return depth(n + 1)
    except RecursionError:
        return n
print(depth() > 150)
