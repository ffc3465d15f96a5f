import asyncio
async def producer(q):
    for i in range(5):
        await q.put(i)
    await q.put(None)
async def consumer(q):
    total = 0
    while (item := await q.get()) is not None:
        total += item
    print("total", total)
async def main():
    q = asyncio.Queue()
    await asyncio.gather(producer(q), consumer(q))
asyncio.run(main())
