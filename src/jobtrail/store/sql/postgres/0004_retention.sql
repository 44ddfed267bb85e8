-- Retention, PostgreSQL dialect of sql/sqlite/0004_retention.sql: rows leave the ledger only
-- through `jobtrail prune`, and only rows of finished operations. Inside its transaction,
-- prune lists the operations it removes in prune_authorizations, deletes their rows, appends
-- a checkpoint entry to the audit chain and empties the table again before committing, so no
-- other session ever sees an authorization. A role that may ALTER these tables can disable
-- the guard; what proves the rest intact is the audit chain, where a removal not covered by a
-- checkpoint is reported as a deletion.
CREATE TABLE prune_authorizations (
    operation_id  text COLLATE "C" PRIMARY KEY
);

CREATE FUNCTION jobtrail_prunable(op text) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1 FROM prune_authorizations p JOIN operations o ON o.operation_id = p.operation_id
        WHERE p.operation_id = op AND o.lease_owner IS NULL AND o.next_poll_at IS NULL
            AND o.state IN ('succeeded', 'failed', 'cancelled', 'result_unavailable',
                'result_validation_failed'))
$$;

-- Every append-only trigger calls this function, so replacing it lets a pruned row go from
-- each of those tables at once (and from tables a later migration guards with it).
CREATE OR REPLACE FUNCTION jobtrail_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN  -- nested: a TRUNCATE trigger has no OLD row to look at
        IF jobtrail_prunable(OLD.operation_id) THEN
            RETURN OLD;
        END IF;
    END IF;
    RAISE EXCEPTION '% is append-only (rows leave only through jobtrail prune)', TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE FUNCTION jobtrail_delete_only_pruned() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF jobtrail_prunable(OLD.operation_id) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '% rows leave only through jobtrail prune, once finished', TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE TRIGGER attempts_delete_only_pruned BEFORE DELETE ON attempts
    FOR EACH ROW EXECUTE FUNCTION jobtrail_delete_only_pruned();
CREATE TRIGGER leases_delete_only_pruned BEFORE DELETE ON leases
    FOR EACH ROW EXECUTE FUNCTION jobtrail_delete_only_pruned();
CREATE TRIGGER operations_delete_only_pruned BEFORE DELETE ON operations
    FOR EACH ROW EXECUTE FUNCTION jobtrail_delete_only_pruned();
CREATE TRIGGER attempts_no_truncate BEFORE TRUNCATE ON attempts
    FOR EACH STATEMENT EXECUTE FUNCTION jobtrail_append_only();
CREATE TRIGGER leases_no_truncate BEFORE TRUNCATE ON leases
    FOR EACH STATEMENT EXECUTE FUNCTION jobtrail_append_only();
CREATE TRIGGER operations_no_truncate BEFORE TRUNCATE ON operations
    FOR EACH STATEMENT EXECUTE FUNCTION jobtrail_append_only();
