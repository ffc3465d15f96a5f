import locale, sys, io
print(locale.getpreferredencoding(), locale.getpreferredencoding(False), locale.getencoding() if hasattr(locale, "getencoding") else "")
print(locale.setlocale(locale.LC_ALL, ""), locale.getlocale())
print(sys.getfilesystemencoding(), sys.stdout.encoding, io.text_encoding(None))
print(locale.localeconv()["decimal_point"], locale.nl_langinfo(locale.CODESET))
