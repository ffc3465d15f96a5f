class Weird(Exception):
    def __str__(self):
        raise RuntimeError("str failed")
raise Weird()
