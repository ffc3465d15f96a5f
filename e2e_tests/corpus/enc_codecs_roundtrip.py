import codecs
s = "Ünïcödé ✓ 日本"
for enc in ("utf-8", "utf-16", "latin-1", "cp1252", "shift_jis", "ascii"):
    try:
        print(enc, s.encode(enc, errors="strict")[:12])
    except UnicodeEncodeError as e:
        print(enc, "error", e.reason, e.start)
print(codecs.lookup("UTF8").name, "x".encode("idna"))
b"\xff".decode("utf-8")
