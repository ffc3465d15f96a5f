import asyncio
async def fails():
    await asyncio.sleep(0)
    raise ValueError("async failure")
async def main():
    await fails()
asyncio.run(main())
