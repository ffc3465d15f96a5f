# A child process that raises prints its traceback to the shared stderr and exits 1.
import multiprocessing as mp
def fail():
    raise ValueError("in the child")
if __name__ == "__main__":
    p = mp.get_context("fork").Process(target=fail)
    p.start(); p.join()
    print("child exit code", p.exitcode)
