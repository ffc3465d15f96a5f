import asyncio
async def ticker(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield i
async def main():
    print([i async for i in ticker(4)])
    agen = ticker(10)
    print(await agen.__anext__())
    await agen.aclose()
asyncio.run(main())
