"""The generic HTTP provider: the requests a provider file makes (request.py) and how their
answers are read (answer.py, parse.py, reading.py), one call at a time (provider.py)."""
