# Signal dispositions a python3 process starts with.
import signal
for name in ("SIGINT", "SIGTERM", "SIGPIPE", "SIGXFSZ", "SIGCHLD", "SIGHUP", "SIGUSR1", "SIGQUIT", "SIGALRM", "SIGTSTP", "SIGTTOU", "SIGTTIN"):
    h = signal.getsignal(getattr(signal, name))
    print(name, h if not callable(h) else h.__name__)
print(sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])))
