# An exception in a pool worker is re-raised in the parent with the remote traceback.
import multiprocessing as mp
def bad(x):
    if x == 2:
        raise ZeroDivisionError(f"cannot handle {x}")
    return x
if __name__ == "__main__":
    with mp.get_context("fork").Pool(2) as pool:
        pool.map(bad, range(4))
