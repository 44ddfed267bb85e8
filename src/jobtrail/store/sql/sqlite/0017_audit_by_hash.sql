-- Audit entries bind the rows they cover by hash (issue 24). From here on:
-- * `prev_hash` and `hash` hold the 32 raw bytes of each SHA-256 (or HMAC) instead of its 64
--   hex characters. SQLite keeps a BLOB as it is in a TEXT column, so the table is not
--   rebuilt: older rows keep their hex text, and readers take either (core/audit.hex_of).
--   What is linked is still the hex text, so every older entry verifies as it did.
-- * an `attempt.intent` entry holds the sha256 of its attempt's stored request, and an
--   `attempt.outcome` entry that of its stored detail, instead of copies of them;
--   `audit verify` checks each attempt row against them (jobtrail.ledger.bindings).
--   Older entries keep their copies and verify as before.
SELECT 1;
