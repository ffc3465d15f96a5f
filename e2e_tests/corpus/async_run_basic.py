import asyncio
async def main():
    await asyncio.sleep(0.01)
    print("inside asyncio.run")
    return 42
print(asyncio.run(main()))
