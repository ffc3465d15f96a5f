# get_event_loop outside a running loop (deprecated in some versions) behaves as in python3.
import asyncio
loop = asyncio.get_event_loop()
print(type(loop).__name__)
print(loop.run_until_complete(asyncio.sleep(0, result="slept")))
