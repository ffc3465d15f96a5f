import signal
print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.raise_signal(signal.SIGINT)
print("ignored SIGINT")
