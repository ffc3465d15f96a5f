import asyncio
async def ok(n):
    await asyncio.sleep(0.01)
    return n
async def bad():
    await asyncio.sleep(0.005)
    raise KeyError("in group")
async def main():
    async with asyncio.TaskGroup() as tg:
        t1 = tg.create_task(ok(1))
        t2 = tg.create_task(bad())
asyncio.run(main())
