import os, tempfile
print(tempfile.gettempdir(), tempfile.tempdir is None or isinstance(tempfile.tempdir, str))
with tempfile.TemporaryDirectory() as d:
    print(os.path.dirname(d) == tempfile.gettempdir(), os.path.basename(d).startswith("tmp"))
    p = os.path.join(d, "f"); open(p, "w").write("x"); print(os.listdir(d))
print(os.path.exists(d))
with tempfile.NamedTemporaryFile("w+", suffix=".txt") as f:
    f.write("named"); f.seek(0); print(f.read(), f.name.endswith(".txt"))
fd, path = tempfile.mkstemp(prefix="my-"); os.write(fd, b"abc"); os.close(fd)
print(open(path).read(), os.path.basename(path).startswith("my-"))
with tempfile.SpooledTemporaryFile(max_size=10) as s:
    s.write(b"0123456789abc"); print(s._rolled)
