import multiprocessing as mp, os, sys
def code(n):
    sys.exit(n)
def killed():
    os.kill(os.getpid(), 9)
if __name__ == "__main__":
    ctx = mp.get_context("fork")
    ps = [ctx.Process(target=code, args=(n,)) for n in (0, 3, "text")] + [ctx.Process(target=killed)]
    for p in ps: p.start(); p.join()
    print([p.exitcode for p in ps])
