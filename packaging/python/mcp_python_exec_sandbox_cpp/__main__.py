from mcp_python_exec_sandbox_cpp._launcher import main

main()
