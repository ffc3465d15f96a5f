import multiprocessing as mp
def cube(x):
    return x ** 3
if __name__ == "__main__":
    with mp.get_context("spawn").Pool(2) as pool:
        print(pool.map(cube, range(6)))
        print(pool.apply(cube, (7,)))
