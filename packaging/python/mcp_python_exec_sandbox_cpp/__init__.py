"""mcp-python-exec-sandbox, the C++ MCP server that runs untrusted Python in a sandbox.

This package only carries the server and zygote binaries (in ``bin/``) and the command that
starts the server; nothing here is meant to be imported by other code.
"""
