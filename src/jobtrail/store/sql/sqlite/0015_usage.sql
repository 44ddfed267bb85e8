-- What a provider reports of work done and billed (request counts, tokens, billed units),
-- as JSON by name: the operation's last reading, and the terminal observation's own.
ALTER TABLE operations ADD COLUMN usage TEXT;
ALTER TABLE observations ADD COLUMN usage TEXT;

-- A terminal observation's usage is what was read, like the rest of the row: never changed.
DROP TRIGGER observations_no_update;
CREATE TRIGGER observations_no_update BEFORE UPDATE ON observations
WHEN OLD.closed_at IS NOT NULL
    OR NEW.id IS NOT OLD.id
    OR NEW.operation_id IS NOT OLD.operation_id
    OR NEW.source IS NOT OLD.source
    OR NEW.observed_at IS NOT OLD.observed_at
    OR NEW.remote_state IS NOT OLD.remote_state
    OR NEW.remote_status IS NOT OLD.remote_status
    OR NEW.provider_updated_at IS NOT OLD.provider_updated_at
    OR NEW.progress IS NOT OLD.progress
    OR NEW.ref IS NOT OLD.ref
    OR NEW.event_id IS NOT OLD.event_id
    OR NEW.usage IS NOT OLD.usage
    OR NEW.seen_count < OLD.seen_count
BEGIN SELECT RAISE(ABORT, 'observations are append-only (only an open run''s last-seen columns may change)'); END;
