import asyncio
async def worker():
    try:
        await asyncio.sleep(10)
    except asyncio.CancelledError:
        print("worker cancelled")
        raise
async def main():
    t = asyncio.create_task(worker())
    await asyncio.sleep(0.01)
    t.cancel()
    try:
        await t
    except asyncio.CancelledError:
        print("main saw the cancellation")
asyncio.run(main())
