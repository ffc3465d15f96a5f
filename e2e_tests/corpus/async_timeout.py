import asyncio
async def slow():
    await asyncio.sleep(10)
async def main():
    try:
        await asyncio.wait_for(slow(), timeout=0.05)
    except asyncio.TimeoutError:
        print("timed out as expected")
    async with asyncio.timeout(0.05):
        await asyncio.sleep(10)
asyncio.run(main())
