# An asyncio TCP server and client on loopback.
import asyncio
async def handle(reader, writer):
    data = await reader.readline()
    writer.write(data.upper())
    await writer.drain()
    writer.close()
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"hello over tcp\n")
    print((await reader.readline()).decode().strip())
    writer.close()
    server.close()
    await server.wait_closed()
asyncio.run(main())
