# A failed task whose exception nobody retrieves is reported when it is collected.
import asyncio, gc
async def boom():
    raise RuntimeError("nobody awaited me")
async def main():
    asyncio.ensure_future(boom())
    await asyncio.sleep(0.01)
asyncio.run(main())
gc.collect()
print("end")
