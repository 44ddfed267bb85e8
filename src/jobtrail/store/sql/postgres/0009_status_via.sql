-- The answer header that named an operation's status URL (Location, Azure-AsyncOperation,
-- Operation-Location), NULL when a body field, the create URL or the provider file did:
-- monitors named by different headers answer differently (docs/providers.md, [status.by_header]).
-- Ledgers from before read as NULL: their operations keep the [status] rule they had.
ALTER TABLE operations ADD COLUMN status_via text;
