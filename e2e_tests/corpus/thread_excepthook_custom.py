import threading
def hook(args):
    print("hooked:", args.exc_type.__name__, args.exc_value, args.thread.name)
threading.excepthook = hook
t = threading.Thread(target=lambda: 1 / 0, name="calc")
t.start(); t.join()
