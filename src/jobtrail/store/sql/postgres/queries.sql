-- Queries of PostgresStore, one per `-- name:` section (not a migration: no number).
-- Parameters are psycopg placeholders; {braces} are filled in by postgres.py. A section
-- shared with SQLite has the same name there (store/engine.py runs both).

-- The operation's provider document, stored once per distinct text (codec.keyed_config).
-- name: insert_config
INSERT INTO provider_configs (digest, document) VALUES (%s, %s)
ON CONFLICT (digest) DO NOTHING;

-- name: insert_operation
INSERT INTO operations ({columns}) VALUES ({values})
ON CONFLICT (op_key) DO NOTHING RETURNING operation_id;

-- One statement for every kind of change, so it is prepared once per connection. An owner
-- (fence given) must still hold the fence. The owner stores the poll time its step decided
-- (the lease lives in its own columns; due_at derives from both), and anyone else never
-- moves the poll time of a leased operation. It returns only what it may change: the rest
-- of the record is the caller's, as written at the insert.
-- name: update_operation
UPDATE operations SET {set_mutable},
    next_poll_at = CASE
        WHEN %(owner)s AND NOT %(release)s THEN %(next_poll_at)s::timestamptz
        WHEN %(owner)s AND poll_requested AND %(next_poll_at)s::timestamptz IS NOT NULL
            THEN least(%(next_poll_at)s::timestamptz, %(updated_at)s::timestamptz)
        WHEN %(owner)s OR lease_owner IS NULL THEN %(next_poll_at)s::timestamptz
        ELSE next_poll_at END,
    poll_requested = CASE
        WHEN %(owner)s AND %(release)s THEN false
        WHEN NOT %(owner)s AND %(request_poll)s AND lease_owner IS NOT NULL THEN true
        ELSE poll_requested END,
    version = version + 1,
    lease_owner = CASE WHEN %(release)s THEN NULL ELSE lease_owner END,
    lease_expires_at = CASE WHEN %(release)s THEN NULL ELSE lease_expires_at END,
    lease_until = CASE WHEN %(release)s THEN NULL ELSE lease_until END
WHERE operation_id = %(operation_id)s AND version = %(version)s
    AND (%(fence)s::bigint IS NULL OR fence = %(fence)s::bigint)
RETURNING {store_decided};

-- A batch of safe reads that move no state need not wait for the WAL flush (changes.must_sync):
-- a crash loses at most those reads, never an intent, a transition or a result.
-- name: relax_commit
SET LOCAL synchronous_commit TO off;

-- Each session's liveness bound (postgres.py `_liveness`, the URL's dead_after).
-- name: bound_session
SELECT set_config('idle_in_transaction_session_timeout', %(idle_ms)s, false),
       set_config('tcp_user_timeout', %(idle_ms)s, false),
       set_config('tcp_keepalives_idle', %(ka_idle)s, false),
       set_config('tcp_keepalives_interval', %(ka_interval)s, false),
       set_config('tcp_keepalives_count', %(ka_count)s, false);

-- name: get
SELECT {operation} FROM operations WHERE operation_id = %s;

-- name: get_by_key
SELECT {operation} FROM operations WHERE op_key = %s;

-- The newest, should two operations claim the same remote job.
-- name: find_by_remote_job
SELECT {operation} FROM operations WHERE provider = %s AND remote_job_id = %s
ORDER BY operation_id DESC LIMIT 1;

-- name: current
SELECT {operation} FROM operations WHERE operation_id = ANY(%s::text[]);

-- name: list
SELECT {operation} FROM operations ORDER BY operation_id DESC LIMIT %s;

-- name: list_in_states
SELECT {operation} FROM operations WHERE state = ANY(%s::text[]) ORDER BY operation_id DESC LIMIT %s;

-- name: count_by_state
SELECT state, count(*) AS n FROM operations GROUP BY state;

-- {clause}: the WHERE clause store/finding.py builds for the query (or nothing).
-- name: count_found
SELECT count(*) AS n FROM operations{clause};

-- name: find
SELECT {operation} FROM operations{clause} ORDER BY operation_id DESC LIMIT %s OFFSET %s;

-- name: history
SELECT * FROM transitions WHERE operation_id = %s ORDER BY seq;

-- `seq` stands in for SQLite's rowid: the order the attempts were recorded in.
-- name: attempts
SELECT * FROM attempts WHERE operation_id = %s ORDER BY started_at, seq;

-- name: observations
SELECT * FROM observations WHERE operation_id = %s ORDER BY id;

-- name: known_events
SELECT event_id FROM observations WHERE event_id = ANY(%s::text[]);

-- name: insert_transition
INSERT INTO transitions (operation_id, at, actor, from_state, to_state, evidence, cause,
    remote_job_id)
VALUES (%(operation_id)s, %(at)s, %(actor)s, %(from_state)s, %(to_state)s, %(evidence)s,
    %(cause)s, %(remote_job_id)s);

-- name: insert_observation
INSERT INTO observations (operation_id, source, observed_at, remote_state, remote_status,
    provider_updated_at, progress, ref, event_id, last_seen_at, seen_count, last_request_id,
    last_progress, closed_at, usage)
VALUES (%(operation_id)s, %(source)s, %(observed_at)s, %(remote_state)s, %(remote_status)s,
    %(provider_updated_at)s, %(progress)s, %(ref)s, %(event_id)s, %(last_seen_at)s,
    %(seen_count)s, %(last_request_id)s, %(last_progress)s, %(closed_at)s, %(usage)s);

-- A read that sees the open run's remote state again: one row updated, nothing appended.
-- name: fold_observation
UPDATE observations SET last_seen_at = %(last_seen_at)s, seen_count = seen_count + 1,
    last_request_id = %(last_request_id)s, last_progress = %(last_progress)s
WHERE operation_id = %(operation_id)s AND closed_at IS NULL AND source = %(source)s
    AND remote_state IS NOT DISTINCT FROM %(remote_state)s
    AND remote_status = %(remote_status)s
RETURNING id;

-- Closes the open runs of these operations (ids, with the time each closes at).
-- name: close_runs
UPDATE observations o SET closed_at = v.at
FROM unnest(%s::text[], %s::timestamptz[]) AS v (id, at)
WHERE o.operation_id = v.id AND o.closed_at IS NULL
RETURNING o.*;

-- name: insert_attempt
INSERT INTO attempts (attempt_id, operation_id, kind, fence, actor, started_at, request,
    finished_at, outcome, http_status, provider_request_id, detail)
VALUES (%(attempt_id)s, %(operation_id)s, %(kind)s, %(fence)s, %(actor)s, %(started_at)s,
    %(request)s, %(finished_at)s, %(outcome)s, %(http_status)s, %(provider_request_id)s,
    %(detail)s);

-- name: finish_attempt
UPDATE attempts SET finished_at = %(finished_at)s, outcome = %(outcome)s,
    http_status = %(http_status)s, provider_request_id = %(provider_request_id)s,
    detail = %(detail)s
WHERE attempt_id = %(attempt_id)s;

-- The release's time on the server's clock (%(clock)s is SQLite's machine clock: unused).
-- name: release_lease_row
UPDATE leases SET released_at = %(released_at)s,
    clock_released = extract(epoch FROM clock_timestamp())
WHERE operation_id = %(operation_id)s AND fence = %(fence)s;

-- Leases up to `limit` due operations, oldest due first, in one statement. Locked rows are
-- skipped, never waited on; due_at (the lease's expiry while leased, else the poll time) is
-- derived by the database, so the due index alone decides what is claimable and the claim
-- leaves the poll time alone. {only} may restrict it to one operation, and {drives} to the
-- operations the claimer has a provider for (HTTP, and the code providers named in
-- %(code)s), a filter riding along the due index. Lease history keeps
-- one row per tenure: the owner that released the operation last moves its row (always at
-- the previous fence: every claim raises the fence by one and leaves the newest row at it)
-- to the new fence; a row is inserted only when the operation changes hands.
-- A leased operation is claimable only once its lease ended on the server's clock too
-- (lease_until, 0012), whatever the claimer's own clock says; the new lease ends
-- %(lease_s)s seconds from now on that clock.
-- name: claim_due
WITH clock AS (
    SELECT extract(epoch FROM clock_timestamp())::double precision AS now
), due AS (
    SELECT operation_id, due_at FROM operations
    WHERE {only}{drives}due_at <= %(now)s
        AND (lease_owner IS NULL OR lease_until IS NULL
            OR lease_until <= (SELECT now FROM clock))
    ORDER BY due_at LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE operations o SET lease_owner = %(owner)s, lease_expires_at = %(expires)s,
        lease_until = (SELECT now FROM clock) + %(lease_s)s, fence = o.fence + 1
    FROM due WHERE o.operation_id = due.operation_id
    RETURNING {operation_o}, due.due_at AS was_due, o.lease_until
), extended AS (
    UPDATE leases l SET fence = c.fence, expires_at = %(expires)s, released_at = NULL,
        clock_expires = c.lease_until, clock_released = NULL
    FROM claimed c
    WHERE l.operation_id = c.operation_id AND l.fence = c.fence - 1
        AND l.owner = %(owner)s AND l.released_at IS NOT NULL AND l.clock = 'postgres'
    RETURNING l.operation_id
), leased AS (
    INSERT INTO leases (operation_id, fence, owner, acquired_at, expires_at, clock,
        clock_acquired, clock_expires)
    SELECT operation_id, fence, %(owner)s, %(now)s, %(expires)s, 'postgres',
        (SELECT now FROM clock), lease_until FROM claimed
    WHERE operation_id NOT IN (SELECT operation_id FROM extended)
)
SELECT * FROM claimed ORDER BY was_due, operation_id;

-- The lease's new end, on the server's clock, is %(lease_s)s seconds from now.
-- name: renew
WITH op AS (
    UPDATE operations SET lease_expires_at = %(expires)s,
        lease_until = extract(epoch FROM clock_timestamp()) + %(lease_s)s
    WHERE operation_id = %(id)s AND fence = %(fence)s AND lease_owner IS NOT NULL
    RETURNING operation_id, lease_until
), lease AS (
    UPDATE leases SET expires_at = %(expires)s, clock = 'postgres',
        clock_expires = (SELECT lease_until FROM op)
    WHERE operation_id IN (SELECT operation_id FROM op) AND fence = %(fence)s
)
SELECT count(*) AS n FROM op;

-- name: release
WITH op AS (
    UPDATE operations SET lease_owner = NULL, lease_expires_at = NULL, lease_until = NULL,
        next_poll_at = CASE WHEN poll_requested AND %(due)s::timestamptz IS NOT NULL
            THEN %(now)s ELSE %(due)s::timestamptz END,
        poll_requested = false, version = version + 1
    WHERE operation_id = %(id)s AND fence = %(fence)s AND lease_owner IS NOT NULL
    RETURNING operation_id
), lease AS (
    UPDATE leases SET released_at = %(now)s,
        clock_released = extract(epoch FROM clock_timestamp())
    WHERE operation_id IN (SELECT operation_id FROM op) AND fence = %(fence)s
)
SELECT count(*) AS n FROM op;

-- name: next_due
SELECT min(due_at) AS due FROM operations WHERE due_at IS NOT NULL;

-- name: next_due_drives
SELECT due_at AS due FROM operations
WHERE due_at IS NOT NULL AND (provider_kind = 'http' OR provider = ANY(%s::text[]))
ORDER BY due_at LIMIT 1;

-- name: leases
SELECT * FROM leases ORDER BY operation_id, fence;

-- name: leases_of
SELECT * FROM leases WHERE operation_id = %s ORDER BY operation_id, fence;

-- The chain's head row is locked last in a transaction, so the lock is held only briefly.
-- name: audit_head
SELECT seq, hash FROM audit_head FOR UPDATE;

-- name: insert_audit
INSERT INTO audit_log (seq, operation_id, entry, prev_hash, hash) VALUES (%s, %s, %s, %s, %s);

-- name: move_audit_head
UPDATE audit_head SET seq = %s, hash = %s;

-- name: audit_rows
SELECT * FROM audit_log ORDER BY seq;

-- name: audit_rows_of
SELECT * FROM audit_log WHERE operation_id = %s ORDER BY seq;

-- Serialises migrations (one advisory lock key per database, "jobtrail" in hex) until the
-- end of the transaction, so that workers starting together do not race.
-- name: begin_migrations
SELECT pg_advisory_xact_lock(x'6a6f62747261696c'::bigint);
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     integer PRIMARY KEY,
    applied_at  timestamptz NOT NULL DEFAULT now()
);

-- name: applied_migrations
SELECT version FROM schema_migrations;

-- name: record_migration
INSERT INTO schema_migrations (version, applied_at) VALUES (%s, %s);

-- Whether the audit chain is keyed (0011), and the head entry that tells it for a chain
-- begun before that migration.
-- name: audit_keying
SELECT keyed, key_check FROM audit_keying;

-- name: insert_audit_keying
INSERT INTO audit_keying (keyed, key_check) VALUES (%s, %s) ON CONFLICT DO NOTHING;

-- name: audit_head_entry
SELECT prev_hash, entry, hash FROM audit_log WHERE seq = (SELECT seq FROM audit_head);

-- The server's clock, which every judgment of time is made on (store/ledger_clock.py).
-- name: ledger_clock
SELECT extract(epoch FROM clock_timestamp())::double precision AS now;

-- A status read whose answer equals the last one its owner read (store/seen.py): the record
-- moves as a folded unchanged read moves it (update time, poll count, poll time as a
-- releasing owner's update decides it) and the lease is given back, only while the record
-- is the one that owner's last write left (version, fence) and its status run is open.
-- name: seen_again
UPDATE operations SET updated_at = %(at)s, poll_count = %(poll_count)s,
    next_poll_at = CASE WHEN poll_requested AND %(next_poll_at)s::timestamptz IS NOT NULL
        THEN least(%(next_poll_at)s::timestamptz, %(at)s::timestamptz)
        ELSE %(next_poll_at)s::timestamptz END,
    poll_requested = false, version = version + 1,
    lease_owner = NULL, lease_expires_at = NULL, lease_until = NULL
WHERE operation_id = %(operation_id)s AND version = %(version)s AND fence = %(fence)s
    AND EXISTS (SELECT 1 FROM observations WHERE operation_id = %(operation_id)s
        AND closed_at IS NULL AND source = 'status')
RETURNING version, next_poll_at;

-- The open status run of an operation seen_again moved: one more read, at %(at)s.
-- name: fold_seen_again
UPDATE observations SET last_seen_at = %(at)s, seen_count = seen_count + 1,
    last_request_id = %(request_id)s
WHERE operation_id = %(operation_id)s AND closed_at IS NULL AND source = 'status';
