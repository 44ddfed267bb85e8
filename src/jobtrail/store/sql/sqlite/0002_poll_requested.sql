-- A status read asked for (by a webhook) while a worker held the operation: the worker's
-- releasing write makes the operation due at once instead of at its own next poll time.
ALTER TABLE operations ADD COLUMN poll_requested INTEGER NOT NULL DEFAULT 0;
