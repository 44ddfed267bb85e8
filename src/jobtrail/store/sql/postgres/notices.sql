-- The outbox of notices (migration 0021; the PostgreSQL dialect): store/notices.py.

-- name: insert_notice
INSERT INTO notices (event_id, type, operation_id, created_at, document, due_at)
VALUES (%(event_id)s, %(type)s, %(operation_id)s, %(created_at)s, %(document)s, %(due_at)s)
ON CONFLICT (event_id) DO NOTHING;

-- name: due_notices
SELECT * FROM notices WHERE due_at IS NOT NULL AND due_at <= %s ORDER BY due_at, event_id
LIMIT %s;

-- name: claim_notice
UPDATE notices SET due_at = %(until)s, claims = claims + 1
WHERE event_id = %(event_id)s AND claims = %(claims)s AND due_at IS NOT NULL
RETURNING *;

-- name: finish_notice
UPDATE notices SET due_at = %(due_at)s, tries = %(tries)s, delivered_at = %(delivered_at)s,
    gave_up_at = %(gave_up_at)s, last_error = %(last_error)s
WHERE event_id = %(event_id)s AND claims = %(claims)s;

-- name: insert_notice_attempt
INSERT INTO notice_attempts (event_id, endpoint, at, outcome, http_status, detail)
VALUES (%(event_id)s, %(endpoint)s, %(at)s, %(outcome)s, %(http_status)s, %(detail)s);

-- name: notices_of
SELECT * FROM notices WHERE operation_id = %s ORDER BY created_at, event_id;

-- name: all_notices
SELECT * FROM notices ORDER BY created_at, event_id LIMIT %s;

-- name: notice_attempts_of
SELECT * FROM notice_attempts WHERE event_id = %s ORDER BY seq;

-- name: notice_backlog
SELECT count(*) AS n FROM notices WHERE due_at IS NOT NULL;
