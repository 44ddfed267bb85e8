"""What agents see of jobtrail: the tool logic over a Ledger (`tools`), the shapes it
returns (`shapes`) and the MCP server that exposes them (`server`, which needs the `mcp`
extra and is imported only by `jobtrail mcp`)."""
