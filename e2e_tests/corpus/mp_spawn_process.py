import multiprocessing as mp
def child(q, n):
    import sys
    q.put((n, __name__, sys.argv[0]))
if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=child, args=(q, i)) for i in range(2)]
    for p in ps: p.start()
    got = sorted(q.get() for _ in ps)
    for p in ps: p.join()
    print(got, [p.exitcode for p in ps])
