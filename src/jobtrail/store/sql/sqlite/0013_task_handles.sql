-- Task handles (MCP Tasks extension, core/tasks.py): a durable, unguessable handle on an
-- operation, held by the agent that asked for it. Only the SHA-256 of a task id is kept, so
-- nobody reading this table can use a handle. A handle is written once and leaves only
-- through `jobtrail prune`: with its operation, or once its time to live has passed (the
-- operation stays). Its owner is the identity the server gave the caller, never the name a
-- client calls itself.
CREATE TABLE task_handles (
    task_hash     TEXT PRIMARY KEY,
    operation_id  TEXT NOT NULL REFERENCES operations(operation_id),
    owner         TEXT NOT NULL,
    tool          TEXT NOT NULL,
    existing      INTEGER NOT NULL DEFAULT 0,
    created_at    TEXT NOT NULL,
    expires_at    TEXT
);
CREATE INDEX task_handles_operation ON task_handles (operation_id);
CREATE INDEX task_handles_expiry ON task_handles (expires_at) WHERE expires_at IS NOT NULL;
CREATE TRIGGER task_handles_no_update BEFORE UPDATE ON task_handles
BEGIN SELECT RAISE(ABORT, 'task handles are write-once'); END;
