"""jobtrail: a durable, auditable ledger for long-running jobs on third-party APIs."""
