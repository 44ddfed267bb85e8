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
