import threading
results = {}
def work(n):
    results[n] = sum(range(n * 1000))
threads = [threading.Thread(target=work, args=(i,), name=f"w{i}") for i in range(4)]
for t in threads: t.start()
for t in threads: t.join()
print(sorted(results.items()))
print(threading.current_thread().name, threading.main_thread() is threading.current_thread())
print(threading.active_count())
