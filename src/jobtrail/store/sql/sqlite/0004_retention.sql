-- Retention: rows leave the ledger only through `jobtrail prune`, and only rows of finished
-- operations. Inside its write transaction, prune lists the operations it removes in
-- prune_authorizations, deletes their rows, appends a checkpoint entry to the audit chain and
-- empties the table again before committing: an authorization never outlives the
-- transaction that made it. Every delete trigger below lets a row go only while its
-- operation is both authorized and finished (a terminal state that ends automation, no lease,
-- nothing scheduled). Anyone who can write to the file can drop a trigger, so this guard
-- keeps mistakes out; what proves the rest intact is the audit chain, where a removal not
-- covered by a checkpoint is reported as a deletion.
CREATE TABLE prune_authorizations (
    operation_id  TEXT PRIMARY KEY
);

DROP TRIGGER IF EXISTS transitions_no_delete;
CREATE TRIGGER transitions_no_delete BEFORE DELETE ON transitions
WHEN NOT EXISTS (
    SELECT 1 FROM prune_authorizations p JOIN operations o ON o.operation_id = p.operation_id
    WHERE p.operation_id = OLD.operation_id AND o.lease_owner IS NULL
        AND o.next_poll_at IS NULL AND o.state IN ('succeeded', 'failed', 'cancelled',
        'result_unavailable', 'result_validation_failed'))
BEGIN SELECT RAISE(ABORT, 'transitions are append-only (rows leave only through jobtrail prune)'); END;

DROP TRIGGER IF EXISTS audit_no_delete;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit_log
WHEN NOT EXISTS (
    SELECT 1 FROM prune_authorizations p JOIN operations o ON o.operation_id = p.operation_id
    WHERE p.operation_id = OLD.operation_id AND o.lease_owner IS NULL
        AND o.next_poll_at IS NULL AND o.state IN ('succeeded', 'failed', 'cancelled',
        'result_unavailable', 'result_validation_failed'))
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only (rows leave only through jobtrail prune)'); END;

DROP TRIGGER IF EXISTS observations_no_delete;
CREATE TRIGGER observations_no_delete BEFORE DELETE ON observations
WHEN NOT EXISTS (
    SELECT 1 FROM prune_authorizations p JOIN operations o ON o.operation_id = p.operation_id
    WHERE p.operation_id = OLD.operation_id AND o.lease_owner IS NULL
        AND o.next_poll_at IS NULL AND o.state IN ('succeeded', 'failed', 'cancelled',
        'result_unavailable', 'result_validation_failed'))
BEGIN SELECT RAISE(ABORT, 'observations are append-only (rows leave only through jobtrail prune)'); END;

CREATE TRIGGER attempts_no_delete BEFORE DELETE ON attempts
WHEN NOT EXISTS (
    SELECT 1 FROM prune_authorizations p JOIN operations o ON o.operation_id = p.operation_id
    WHERE p.operation_id = OLD.operation_id AND o.lease_owner IS NULL
        AND o.next_poll_at IS NULL AND o.state IN ('succeeded', 'failed', 'cancelled',
        'result_unavailable', 'result_validation_failed'))
BEGIN SELECT RAISE(ABORT, 'attempts leave only through jobtrail prune, once finished'); END;

CREATE TRIGGER leases_no_delete BEFORE DELETE ON leases
WHEN NOT EXISTS (
    SELECT 1 FROM prune_authorizations p JOIN operations o ON o.operation_id = p.operation_id
    WHERE p.operation_id = OLD.operation_id AND o.lease_owner IS NULL
        AND o.next_poll_at IS NULL AND o.state IN ('succeeded', 'failed', 'cancelled',
        'result_unavailable', 'result_validation_failed'))
BEGIN SELECT RAISE(ABORT, 'leases leave only through jobtrail prune, once finished'); END;

CREATE TRIGGER operations_no_delete BEFORE DELETE ON operations
WHEN NOT EXISTS (
    SELECT 1 FROM prune_authorizations p
    WHERE p.operation_id = OLD.operation_id AND OLD.lease_owner IS NULL
        AND OLD.next_poll_at IS NULL AND OLD.state IN ('succeeded', 'failed', 'cancelled',
        'result_unavailable', 'result_validation_failed'))
BEGIN SELECT RAISE(ABORT, 'operations leave only through jobtrail prune, once finished'); END;
