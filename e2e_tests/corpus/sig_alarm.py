import signal, time
def on_alarm(sig, frame):
    raise TimeoutError("alarm rang")
signal.signal(signal.SIGALRM, on_alarm)
signal.setitimer(signal.ITIMER_REAL, 0.05)
try:
    time.sleep(5)
except TimeoutError as e:
    print("interrupted:", e)
signal.alarm(0)
