-- What a provider reports of work done and billed (request counts, tokens, billed units),
-- as JSON by name: the operation's last reading, and the terminal observation's own.
ALTER TABLE operations ADD COLUMN usage text;
ALTER TABLE observations ADD COLUMN usage text;

-- A terminal observation's usage is what was read, like the rest of the row: never changed.
CREATE OR REPLACE FUNCTION jobtrail_observation_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.closed_at IS NOT NULL
        OR (NEW.id, NEW.operation_id, NEW.source, NEW.observed_at, NEW.remote_state,
            NEW.remote_status, NEW.provider_updated_at, NEW.progress, NEW.ref, NEW.event_id,
            NEW.usage)
        IS DISTINCT FROM
           (OLD.id, OLD.operation_id, OLD.source, OLD.observed_at, OLD.remote_state,
            OLD.remote_status, OLD.provider_updated_at, OLD.progress, OLD.ref, OLD.event_id,
            OLD.usage)
        OR NEW.seen_count < OLD.seen_count
    THEN
        RAISE EXCEPTION 'observations are append-only (only an open run''s last-seen columns '
            'may change)' USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END;
$$;
