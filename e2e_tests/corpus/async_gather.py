import asyncio
async def job(n):
    await asyncio.sleep(0.01 * (3 - n))
    print("job", n, "done")
    return n * n
async def main():
    results = await asyncio.gather(*(job(i) for i in range(3)))
    print(results)
asyncio.run(main())
