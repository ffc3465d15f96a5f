"""A scripted MCP peer for the client tests: behaves as argv[1] says."""

import json
import sys
import time


def send(msg, end="\n"):
    sys.stdout.write(json.dumps(msg) + end)
    sys.stdout.flush()


def read():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)


def result_for(rid, text, exit_code=0):
    return {"jsonrpc": "2.0", "id": rid, "result": {
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"stdout": text, "stderr": "", "exit_code": exit_code}}}


def main(mode):
    if mode == "garbage":
        print("this is not JSON", flush=True)
        read()
        return
    init = read()
    send({"jsonrpc": "2.0", "id": init["id"], "result": {
        "protocolVersion": init["params"]["protocolVersion"],
        "serverInfo": {"name": "fake-peer", "version": "0"}, "capabilities": {}}})
    assert read()["method"] == "notifications/initialized"
    if mode == "exit":
        read()
        sys.exit(3)
    if mode == "ping":
        call = read()
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}})
        send({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
        pong = read()
        ok = pong.get("id") == "srv-1" and pong.get("result") == {}
        # CRLF framing must be accepted too.
        send(result_for(call["id"], "pong-ok" if ok else f"bad pong {pong}"), end="\r\n")
    if mode == "reorder":
        first, second = read(), read()
        send(result_for(second["id"], "second"))
        send(result_for(first["id"], "first", exit_code=1))
    if mode == "big":
        call = read()
        line = json.dumps(result_for(call["id"], "y" * (2 << 20))) + "\n"
        half = len(line) // 2
        sys.stdout.write(line[:half])  # a line arriving over several reads
        sys.stdout.flush()
        time.sleep(0.05)
        sys.stdout.write(line[half:] + json.dumps({"jsonrpc": "2.0", "method": "notifications/x"}) + "\n")
        sys.stdout.flush()
    read()  # stays until the client closes stdin


if __name__ == "__main__":
    main(sys.argv[1])
