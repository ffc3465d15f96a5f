import asyncio
loop = asyncio.new_event_loop()
asyncio.set_event_loop(loop)
async def hello():
    return "from a new loop"
print(loop.run_until_complete(hello()))
print(loop.is_running(), loop.is_closed())
loop.close()
print(loop.is_closed())
