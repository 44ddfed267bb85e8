-- The counts behind `GET /metrics` (core/metrics.py), read in one transaction.

-- name: metric_operations
SELECT state, provider, count(*) AS n FROM operations GROUP BY state, provider;

-- name: metric_attempts
SELECT a.kind AS kind, o.provider AS provider, a.outcome AS outcome, count(*) AS n
FROM attempts a JOIN operations o ON o.operation_id = a.operation_id
GROUP BY a.kind, o.provider, a.outcome;

-- name: metric_folded_reads
SELECT o.provider AS provider, sum(b.seen_count - 1) AS n
FROM observations b JOIN operations o ON o.operation_id = b.operation_id
WHERE b.source = 'status' AND b.seen_count > 1
GROUP BY o.provider;

-- name: metric_unsettled
SELECT state, provider, capabilities, count(*) AS n FROM operations
WHERE state IN ('create_unknown', 'reconciliation')
GROUP BY state, provider, capabilities;

-- name: metric_poll_lateness
SELECT provider, le, n, seconds FROM poll_lateness;

-- Adds one flush of a worker's counts (a JSON list of [provider, le, n, seconds]), one
-- statement whatever its size. (An upsert's SELECT needs a WHERE in SQLite's grammar.)
-- name: add_poll_lateness
INSERT INTO poll_lateness (provider, le, n, seconds)
SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
    json_extract(value, '$[3]')
FROM json_each(?) WHERE true
ON CONFLICT (provider, le) DO UPDATE
SET n = poll_lateness.n + excluded.n, seconds = poll_lateness.seconds + excluded.seconds;
