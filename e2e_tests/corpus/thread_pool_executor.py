from concurrent.futures import ThreadPoolExecutor, as_completed
def work(x):
    if x == 3:
        raise KeyError(x)
    return x * x
with ThreadPoolExecutor(max_workers=3) as ex:
    futures = {ex.submit(work, i): i for i in range(5)}
    out = {}
    for f in as_completed(futures):
        try:
            out[futures[f]] = f.result()
        except KeyError as e:
            out[futures[f]] = f"error {e}"
print(sorted(out.items()))
