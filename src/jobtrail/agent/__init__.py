"""What agents see of jobtrail: the tool logic over a Ledger (`tools`), the shapes it
returns (`shapes`), who the caller is (`identity`), and the MCP server that exposes them
(`server`, with the Tasks extension in `tasks` and Streamable HTTP in `http`; these need
the `mcp` extra and are imported only by `jobtrail mcp` and `jobtrail serve`)."""
