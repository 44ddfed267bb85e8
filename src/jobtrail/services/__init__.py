"""Services: what surfaces ask for, built on the ledger (decisions, adoption, bulk actions,
stories and explanations, the runtime that wires a worker), holding no rule of their own."""
