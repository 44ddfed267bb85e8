"""The webhook receiver: verify a delivery, read its event, record it as an observation.

    verify.py   signature and timestamp window (Standard Webhooks or HMAC over the body)
    event.py    the event's fields, read through the provider file's [webhooks] paths
    routes.py   the aiohttp route `POST /webhooks/{provider}`, thin: the ledger's verb
                `observe_event` deduplicates by event id and schedules a status read

A webhook is a hint, never a state change: it is recorded as an observation and makes the
operation due for a status read; only that read moves the operation (DESIGN rule 8).
"""
