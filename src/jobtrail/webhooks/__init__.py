"""The webhook receiver: verify a delivery, read its event, record it as an observation.

    verify.py   signature and timestamp window (Standard Webhooks or HMAC over the body)
    event.py    the event's fields, read through the provider file's [webhooks] paths
    intake.py   the ledger side: deduplicate by event id in the store, schedule a status read
    routes.py   the aiohttp route `POST /webhooks/{provider}`, thin

A webhook is a hint, never a state change: it is recorded as an observation and makes the
operation due for a status read; only that read moves the operation (DESIGN rule 8).
"""
