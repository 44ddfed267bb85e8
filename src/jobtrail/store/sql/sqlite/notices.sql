-- The outbox of notices (migration 0021): store/notices.py.

-- name: insert_notice
INSERT INTO notices (event_id, type, operation_id, created_at, document, due_at)
VALUES (:event_id, :type, :operation_id, :created_at, :document, :due_at)
ON CONFLICT (event_id) DO NOTHING;

-- name: due_notices
SELECT * FROM notices WHERE due_at IS NOT NULL AND due_at <= ? ORDER BY due_at, event_id
LIMIT ?;

-- name: claim_notice
UPDATE notices SET due_at = :until, claims = claims + 1
WHERE event_id = :event_id AND claims = :claims AND due_at IS NOT NULL
RETURNING *;

-- name: finish_notice
UPDATE notices SET due_at = :due_at, tries = :tries, delivered_at = :delivered_at,
    gave_up_at = :gave_up_at, last_error = :last_error
WHERE event_id = :event_id AND claims = :claims;

-- name: insert_notice_attempt
INSERT INTO notice_attempts (event_id, endpoint, at, outcome, http_status, detail)
VALUES (:event_id, :endpoint, :at, :outcome, :http_status, :detail);

-- name: notices_of
SELECT * FROM notices WHERE operation_id = ? ORDER BY created_at, event_id;

-- name: all_notices
SELECT * FROM notices ORDER BY created_at, event_id LIMIT ?;

-- name: notice_attempts_of
SELECT * FROM notice_attempts WHERE event_id = ? ORDER BY seq;

-- name: notice_backlog
SELECT count(*) AS n FROM notices WHERE due_at IS NOT NULL;
