import time, datetime, locale
t = time.gmtime(0)
print(time.strftime("%A %d %B %Y %H:%M:%S %p", t))
print(datetime.datetime(2024, 2, 29, 13, 5).strftime("%c | %x | %X"))
print(f"{1234567.891:,.2f}", locale.format_string("%.2f", 1234.5, grouping=True))
