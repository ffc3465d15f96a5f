import multiprocessing as mp
def double(x):
    return 2 * x
if __name__ == "__main__":
    with mp.get_context("forkserver").Pool(2) as pool:
        print(sorted(pool.imap_unordered(double, range(8))))
