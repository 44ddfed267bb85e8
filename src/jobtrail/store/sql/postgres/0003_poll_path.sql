-- The lean poll path (issue 10): observation runs, and the poll time kept apart from the lease.

-- Consecutive status reads that see the same remote state fold into one observation run:
-- the row is the run's first read (observed_at, ref, progress as first seen) and these
-- columns follow its last. A run is open while closed_at is NULL; at most one status run per
-- operation is open, and it is always the operation's newest observation. Rows of any other
-- source are inserted closed.
ALTER TABLE observations
    ADD COLUMN last_seen_at timestamptz,
    ADD COLUMN seen_count integer NOT NULL DEFAULT 1,
    ADD COLUMN last_request_id text,
    ADD COLUMN last_progress text,
    ADD COLUMN closed_at timestamptz;
ALTER TABLE observations DISABLE TRIGGER observations_append_only;
UPDATE observations SET last_seen_at = observed_at, last_progress = progress,
    closed_at = observed_at;
ALTER TABLE observations ENABLE TRIGGER observations_append_only;
CREATE INDEX observations_open_run ON observations (operation_id) WHERE closed_at IS NULL;

-- Observations stay append-only but for the open run's own columns: only the last-seen
-- columns of a run not yet closed may change (its count only upwards), and closing it
-- freezes it. The closing write appends an audit entry with the run's final values.
CREATE FUNCTION jobtrail_observation_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.closed_at IS NOT NULL
        OR (NEW.id, NEW.operation_id, NEW.source, NEW.observed_at, NEW.remote_state,
            NEW.remote_status, NEW.provider_updated_at, NEW.progress, NEW.ref, NEW.event_id)
        IS DISTINCT FROM
           (OLD.id, OLD.operation_id, OLD.source, OLD.observed_at, OLD.remote_state,
            OLD.remote_status, OLD.provider_updated_at, OLD.progress, OLD.ref, OLD.event_id)
        OR NEW.seen_count < OLD.seen_count
    THEN
        RAISE EXCEPTION 'observations are append-only (only an open run''s last-seen columns '
            'may change)' USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END;
$$;
DROP TRIGGER observations_append_only ON observations;
CREATE TRIGGER observations_no_delete BEFORE DELETE ON observations
    FOR EACH ROW EXECUTE FUNCTION jobtrail_append_only();
CREATE TRIGGER observations_open_run_only BEFORE UPDATE ON observations
    FOR EACH ROW EXECUTE FUNCTION jobtrail_observation_run();

-- An operation is due when due_at <= now: the lease's expiry while leased (so a crashed
-- worker's operations come back exactly when its leases run out), else the next poll time.
-- The store derives it, so next_poll_at always means the poll time, and the claim still
-- reads one index.
ALTER TABLE operations ADD COLUMN due_at timestamptz GENERATED ALWAYS AS (
    CASE WHEN lease_owner IS NOT NULL THEN lease_expires_at ELSE next_poll_at END
) STORED;
DROP INDEX operations_due;
CREATE INDEX operations_due ON operations (due_at) WHERE due_at IS NOT NULL;
