# packages: numpy
import multiprocessing as mp
import numpy as np
def norm(seed):
    return float(np.round(np.linalg.norm(np.random.default_rng(seed).normal(size=10)), 6))
if __name__ == "__main__":
    with mp.get_context("fork").Pool(2) as pool:
        print(pool.map(norm, range(4)))
    with mp.get_context("spawn").Pool(2) as pool:
        print(pool.map(norm, range(2)))
