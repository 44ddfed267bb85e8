-- Task handles, PostgreSQL dialect of sql/sqlite/0013_task_handles.sql: only the SHA-256 of
-- a task id is kept; a handle is written once and leaves only through `jobtrail prune`
-- (with its operation, or once expired; the operation stays).
CREATE TABLE task_handles (
    task_hash     text COLLATE "C" PRIMARY KEY,
    operation_id  text COLLATE "C" NOT NULL REFERENCES operations(operation_id),
    owner         text NOT NULL,
    tool          text NOT NULL,
    existing      boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz
);
CREATE INDEX task_handles_operation ON task_handles (operation_id);
CREATE INDEX task_handles_expiry ON task_handles (expires_at) WHERE expires_at IS NOT NULL;

CREATE FUNCTION jobtrail_task_handles_no_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'task handles are write-once' USING ERRCODE = 'restrict_violation';
END;
$$;
CREATE TRIGGER task_handles_no_update BEFORE UPDATE ON task_handles
    FOR EACH ROW EXECUTE FUNCTION jobtrail_task_handles_no_update();
