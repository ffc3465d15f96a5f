import multiprocessing as mp
def square(x):
    return x * x
if __name__ == "__main__":
    ctx = mp.get_context("fork")
    with ctx.Pool(2) as pool:
        print(pool.map(square, range(10)))
