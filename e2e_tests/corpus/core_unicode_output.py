# Non-ASCII text in both streams.
import sys
print("Grüße, 世界, 🌍, \u00e9\u0301, \u200b|")
print("ошибка: ñ", file=sys.stderr)
print(ascii("é"), repr("é"), "é".encode())
