"""The command line: thin commands that parse input, call the ledger and format output."""
