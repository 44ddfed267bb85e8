-- The counts behind `GET /metrics` (core/metrics.py), PostgreSQL dialect.

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

-- Adds one flush of a worker's counts (a JSON list of [provider, le, n, seconds], in key
-- order: two workers adding at once lock the rows in the same order), one statement
-- whatever its size.
-- name: add_poll_lateness
INSERT INTO poll_lateness (provider, le, n, seconds)
SELECT value->>0, value->>1, (value->>2)::bigint, (value->>3)::double precision
FROM jsonb_array_elements(%s::jsonb)
ON CONFLICT (provider, le) DO UPDATE
SET n = poll_lateness.n + excluded.n, seconds = poll_lateness.seconds + excluded.seconds;
