# asyncio's own warnings and its debug mode reach stderr as in python3.
import asyncio
async def main():
    loop = asyncio.get_running_loop()
    loop.slow_callback_duration = 10
    print(loop.get_debug())
asyncio.run(main(), debug=False)
coro = asyncio.sleep(0)
del coro
import gc; gc.collect()
print("done")
