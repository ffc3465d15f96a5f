import asyncio, sys
async def main():
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; print('child out'); print('child err', file=sys.stderr); sys.exit(3)",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    print(proc.returncode, out, err)
asyncio.run(main())
