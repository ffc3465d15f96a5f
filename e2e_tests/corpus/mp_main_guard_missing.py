# Without the __main__ guard, spawn re-imports the script in the child: its top level runs again.
import multiprocessing as mp
print("top level, name =", __name__)
def f():
    return 1
if __name__ == "__main__":
    p = mp.get_context("spawn").Process(target=f)
    p.start(); p.join()
    print("exit", p.exitcode)
