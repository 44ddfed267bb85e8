-- Task handles (migration 0013): written once, read by the hash of their id.

-- name: insert_task
INSERT INTO task_handles (task_hash, operation_id, owner, tool, existing, created_at, expires_at)
VALUES (%(task_hash)s, %(operation_id)s, %(owner)s, %(tool)s, %(existing)s, %(created_at)s,
    %(expires_at)s);

-- name: get_task
SELECT * FROM task_handles WHERE task_hash = %s;
