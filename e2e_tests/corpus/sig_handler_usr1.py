import os, signal
got = []
signal.signal(signal.SIGUSR1, lambda s, f: got.append(signal.Signals(s).name))
os.kill(os.getpid(), signal.SIGUSR1)
signal.raise_signal(signal.SIGUSR1)
print(got)
