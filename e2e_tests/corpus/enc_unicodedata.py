import unicodedata
for ch in "é✓Ω😀":
    print(ch, unicodedata.name(ch), unicodedata.category(ch), len(ch.encode()))
print(unicodedata.normalize("NFD", "é") == "e\u0301", unicodedata.unidata_version)
