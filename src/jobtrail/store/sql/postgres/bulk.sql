-- Bulk actions (migration 0016): written once, read by their id.

-- name: insert_bulk
INSERT INTO bulk_actions (bulk_id, actor, action, created_at, document)
VALUES (%(bulk_id)s, %(actor)s, %(action)s, %(created_at)s, %(document)s)
ON CONFLICT (bulk_id) DO NOTHING;

-- name: get_bulk
SELECT * FROM bulk_actions WHERE bulk_id = %s;
