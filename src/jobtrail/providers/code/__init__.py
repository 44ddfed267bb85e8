"""Code providers: the contract a plug-in follows (contract.py) and how plug-ins are found
(plugins.py)."""
