import multiprocessing as mp
def echo(conn):
    while (msg := conn.recv()) != "stop":
        conn.send(msg[::-1])
    conn.close()
if __name__ == "__main__":
    a, b = mp.Pipe()
    p = mp.Process(target=echo, args=(b,))
    p.start()
    for word in ("abc", "hello"):
        a.send(word)
        print(a.recv())
    a.send("stop")
    p.join()
