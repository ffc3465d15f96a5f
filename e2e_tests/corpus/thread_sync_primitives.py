import threading, queue
q = queue.Queue()
cond = threading.Condition()
ready = []
def consumer():
    with cond:
        cond.wait_for(lambda: ready)
    q.put("consumed " + ready[0])
t = threading.Thread(target=consumer)
t.start()
with cond:
    ready.append("item")
    cond.notify_all()
t.join()
print(q.get())
local = threading.local()
local.x = 1
def check():
    print("thread sees x:", hasattr(local, "x"))
th = threading.Thread(target=check); th.start(); th.join()
b = threading.Barrier(2)
th = threading.Thread(target=b.wait); th.start(); b.wait(); th.join()
print("barrier passed")
