-- Queries of PostgresStore.prune (not a migration: no number). The operations being pruned
-- are the rows of prune_authorizations, which exist only inside prune's transaction.

-- name: clear
DELETE FROM prune_authorizations;

-- Prune's transaction has no idle bound: the archive is written between its statements,
-- which a long prune may take longer than the session's dead_after (postgres.py `_liveness`).
-- name: unbounded
SET LOCAL idle_in_transaction_session_timeout = 0;

-- Finished (see store/retention.py PRUNABLE), unchanged since the cut-off, nothing pending.
-- name: prunable
SELECT {operation} FROM operations WHERE state IN ({states}) AND updated_at < %(cutoff)s
    AND lease_owner IS NULL AND next_poll_at IS NULL ORDER BY operation_id;

-- name: authorize
INSERT INTO prune_authorizations (operation_id) VALUES (%s);

-- name: transitions
SELECT * FROM transitions WHERE operation_id IN (SELECT operation_id FROM prune_authorizations)
ORDER BY operation_id, seq;

-- name: attempts
SELECT * FROM attempts WHERE operation_id IN (SELECT operation_id FROM prune_authorizations)
ORDER BY operation_id, started_at, seq;

-- name: observations
SELECT * FROM observations WHERE operation_id IN (SELECT operation_id FROM prune_authorizations)
ORDER BY operation_id, id;

-- name: leases
SELECT * FROM leases WHERE operation_id IN (SELECT operation_id FROM prune_authorizations)
ORDER BY operation_id, fence;

-- name: audit
SELECT * FROM audit_log WHERE operation_id IN (SELECT operation_id FROM prune_authorizations)
ORDER BY seq;

-- Children first: their delete triggers look the operation up.
-- name: delete_owned
DELETE FROM task_handles WHERE operation_id IN (SELECT operation_id FROM prune_authorizations);
DELETE FROM audit_log WHERE operation_id IN (SELECT operation_id FROM prune_authorizations);
DELETE FROM transitions WHERE operation_id IN (SELECT operation_id FROM prune_authorizations);
DELETE FROM observations WHERE operation_id IN (SELECT operation_id FROM prune_authorizations);
DELETE FROM attempts WHERE operation_id IN (SELECT operation_id FROM prune_authorizations);
DELETE FROM leases WHERE operation_id IN (SELECT operation_id FROM prune_authorizations);
DELETE FROM operations WHERE operation_id IN (SELECT operation_id FROM prune_authorizations);

-- name: last_audit
SELECT * FROM audit_log ORDER BY seq DESC LIMIT 1;

-- The chain's head before the checkpoint, locked as every audit writer locks it.
-- name: head
SELECT seq, hash FROM audit_head FOR UPDATE;

-- Task handles past their time to live (migration 0013): the handle goes, its operation stays.
-- name: expired_tasks
DELETE FROM task_handles WHERE expires_at IS NOT NULL AND expires_at <= %(now)s;

-- Packing (migration 0023, ledger/packing.py) runs the same protocol in batches, the rows
-- of each packed operation replaced by one packed row in the same transaction.
-- Prunable, and no notice to a person still due (its delivery reads the operation).
-- name: packable
SELECT {operation} FROM operations WHERE state IN ({states}) AND updated_at < %(cutoff)s
    AND lease_owner IS NULL AND next_poll_at IS NULL
    AND NOT EXISTS (SELECT 1 FROM notices n
        WHERE n.operation_id = operations.operation_id AND n.due_at IS NOT NULL)
ORDER BY operation_id LIMIT %(limit)s;

-- name: insert_packed
INSERT INTO packed_operations (operation_id, dictionary_id, data) VALUES (%s, %s, %s);

-- name: insert_dictionary
INSERT INTO pack_dictionaries (dictionary_id, digest, data, trained_at, samples)
VALUES (%s, %s, %s, %s, %s);

-- name: newest_dictionary
SELECT dictionary_id, digest, data FROM pack_dictionaries ORDER BY dictionary_id DESC LIMIT 1;

-- name: dictionaries
SELECT dictionary_id, digest, data FROM pack_dictionaries ORDER BY dictionary_id;

-- name: packed
SELECT operation_id, dictionary_id, data FROM packed_operations WHERE operation_id = %s;

-- name: all_packed
SELECT operation_id, dictionary_id, data FROM packed_operations ORDER BY operation_id;
