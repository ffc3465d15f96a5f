from concurrent.futures import ProcessPoolExecutor
def work(x):
    return sum(range(x))
if __name__ == "__main__":
    with ProcessPoolExecutor(max_workers=2) as ex:
        print(list(ex.map(work, [10, 100, 1000])))
