import asyncio, time
def blocking(x):
    time.sleep(0.01)
    return x * 2
async def main():
    loop = asyncio.get_running_loop()
    print(await asyncio.gather(*(loop.run_in_executor(None, blocking, i) for i in range(4))))
    print(await asyncio.to_thread(blocking, 21))
asyncio.run(main())
