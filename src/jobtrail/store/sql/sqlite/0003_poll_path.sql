-- The lean poll path (issue 10): observation runs, and the poll time kept apart from the lease.

-- Consecutive status reads that see the same remote state fold into one observation run:
-- the row is the run's first read (observed_at, ref, progress as first seen) and these
-- columns follow its last. A run is open while closed_at is NULL; at most one status run per
-- operation is open, and it is always the operation's newest observation. Rows of any other
-- source are inserted closed.
ALTER TABLE observations ADD COLUMN last_seen_at TEXT;
ALTER TABLE observations ADD COLUMN seen_count INTEGER NOT NULL DEFAULT 1;
ALTER TABLE observations ADD COLUMN last_request_id TEXT;
ALTER TABLE observations ADD COLUMN last_progress TEXT;
ALTER TABLE observations ADD COLUMN closed_at TEXT;
-- Rows written before runs existed are runs of one read, closed (the old trigger refuses the
-- backfill, so it goes first; this migration runs in one transaction).
DROP TRIGGER observations_no_update;
UPDATE observations SET last_seen_at = observed_at, last_progress = progress,
    closed_at = observed_at;
CREATE INDEX observations_open_run ON observations (operation_id) WHERE closed_at IS NULL;

-- Observations stay append-only but for the open run's own columns: only the last-seen
-- columns of a run not yet closed may change (its count only upwards), and closing it
-- freezes it. The closing write appends an audit entry with the run's final values.
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
    OR NEW.seen_count < OLD.seen_count
BEGIN SELECT RAISE(ABORT, 'observations are append-only (only an open run''s last-seen columns may change)'); END;

-- An operation is due when due_at <= now: the lease's expiry while leased (so a crashed
-- worker's operations come back exactly when its leases run out), else the next poll time.
-- The store derives it, so next_poll_at always means the poll time, and the claim still
-- reads one index.
ALTER TABLE operations ADD COLUMN due_at TEXT GENERATED ALWAYS AS (
    CASE WHEN lease_owner IS NOT NULL THEN lease_expires_at ELSE next_poll_at END
) VIRTUAL;
DROP INDEX operations_due;
CREATE INDEX operations_due ON operations (due_at) WHERE due_at IS NOT NULL;
