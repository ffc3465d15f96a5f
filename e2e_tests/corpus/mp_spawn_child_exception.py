import multiprocessing as mp
def fail(n):
    raise RuntimeError(f"spawned child {n} failed")
if __name__ == "__main__":
    p = mp.get_context("spawn").Process(target=fail, args=(1,))
    p.start(); p.join()
    print("exit code", p.exitcode)
