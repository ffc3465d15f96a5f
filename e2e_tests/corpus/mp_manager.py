import multiprocessing as mp
def fill(d, key):
    d[key] = key * 10
if __name__ == "__main__":
    with mp.Manager() as manager:
        d = manager.dict()
        ps = [mp.Process(target=fill, args=(d, i)) for i in range(3)]
        for p in ps: p.start()
        for p in ps: p.join()
        print(sorted(d.items()))
