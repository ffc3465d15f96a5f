try:
    raise ExceptionGroup("eg", [ValueError(1), TypeError(2), ValueError(3)])
except* ValueError as eg:
    print("handled", [str(e) for e in eg.exceptions])
except* TypeError:
    raise RuntimeError("from handler")
