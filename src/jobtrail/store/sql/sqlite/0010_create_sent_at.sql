-- When the outcome of the last create call that may have reached the provider was recorded:
-- a lookup that finds nothing proves no job exists only once the provider's visibility
-- window has passed since then (core/apply.py, `Capabilities.absent_after`).
ALTER TABLE operations ADD COLUMN create_sent_at TEXT;

-- Operations already looking for their job count from their last change: the create they
-- look for was sent before it.
UPDATE operations SET create_sent_at = updated_at
 WHERE state IN ('create_unknown', 'reconciliation');
