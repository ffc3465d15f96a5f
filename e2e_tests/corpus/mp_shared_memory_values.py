import multiprocessing as mp
def add(v, arr, lock):
    for _ in range(100):
        with lock:
            v.value += 1
    arr[0] += 1
if __name__ == "__main__":
    ctx = mp.get_context("fork")
    v = ctx.Value("i", 0)
    arr = ctx.Array("d", [0.0, 0.0])
    lock = ctx.Lock()
    ps = [ctx.Process(target=add, args=(v, arr, lock)) for _ in range(3)]
    for p in ps: p.start()
    for p in ps: p.join()
    print(v.value, list(arr)[1])
