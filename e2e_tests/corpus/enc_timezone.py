import time, datetime, os
print(time.tzname, time.timezone, time.daylight)
print(datetime.datetime.fromtimestamp(0).isoformat())
print(os.environ.get("TZ"))
from zoneinfo import ZoneInfo
print(datetime.datetime(2024, 7, 1, 12, tzinfo=ZoneInfo("Europe/Paris")).utcoffset())
