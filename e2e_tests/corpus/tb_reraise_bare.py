try:
    open("/definitely/not/here.txt")
except OSError as e:
    print("errno", e.errno, e.strerror)
    raise
