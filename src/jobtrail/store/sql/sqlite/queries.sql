-- Queries of SqliteStore, one per `-- name:` section (not a migration: no number).
-- Parameters are sqlite3 placeholders (`?`, `?N`, `:name`). {braces} are filled in by
-- sqlite.py: the codec's column lists when loaded, the rest per call (see store/queries.py).
-- A section shared with PostgreSQL has the same name there (store/engine.py runs both); an
-- array parameter is a JSON list, read with json_each.

-- name: begin_migrations
CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);

-- name: applied_migrations
SELECT version FROM schema_migrations;

-- name: record_migration
INSERT INTO schema_migrations VALUES (?, ?);

-- The operation's provider document, stored once per distinct text (codec.keyed_config).
-- name: insert_config
INSERT INTO provider_configs (digest, document) VALUES (?, ?) ON CONFLICT (digest) DO NOTHING;

-- name: insert_operation
INSERT INTO operations ({columns}) VALUES ({values})
ON CONFLICT (op_key) DO NOTHING RETURNING operation_id;

-- One statement for every kind of change. {assigned} is the columns the change moves,
-- {poll} one of the poll_* sections below, {release} release_columns (with a leading
-- comma) or nothing, {guard} owner_guard or nothing. It returns only what the store
-- decides: the rest of the record is the caller's.
-- name: update_operation
UPDATE operations SET {assigned}, {poll}, version = version + 1{release}
WHERE operation_id = :operation_id AND version = :version{guard}
RETURNING {store_decided};

-- A writer without the lease never moves the poll time of an operation a worker holds: the
-- owner decides it (a webhook asks for a read through poll_requested instead).
-- name: poll_unless_leased
next_poll_at = CASE WHEN lease_owner IS NULL THEN :next_poll_at ELSE next_poll_at END

-- Added to poll_unless_leased (after a comma) when the writer asks the owner for a read.
-- name: request_poll
poll_requested = CASE WHEN lease_owner IS NOT NULL THEN 1 ELSE poll_requested END

-- The poll time and the lease are apart (due_at derives from both), so an owner stores the
-- poll time its step decided with every write.
-- name: poll_while_leased
next_poll_at = :next_poll_at

-- name: poll_on_release
next_poll_at = CASE WHEN poll_requested = 1 AND :next_poll_at IS NOT NULL
    THEN min(:next_poll_at, :updated_at) ELSE :next_poll_at END, poll_requested = 0

-- name: release_columns
lease_owner = NULL, lease_expires_at = NULL, lease_until = NULL, lease_clock = NULL

-- name: owner_guard
AND fence = :fence

-- name: get
SELECT {operation} FROM operations WHERE operation_id = ?;

-- name: get_by_key
SELECT {operation} FROM operations WHERE op_key = ?;

-- The newest, should two operations claim the same remote job.
-- name: find_by_remote_job
SELECT {operation} FROM operations WHERE provider = ? AND remote_job_id = ?
ORDER BY operation_id DESC LIMIT 1;

-- name: list
SELECT {operation} FROM operations ORDER BY operation_id DESC LIMIT ?;

-- name: current
SELECT {operation} FROM operations WHERE operation_id IN (SELECT value FROM json_each(?));

-- name: list_in_states
SELECT {operation} FROM operations WHERE state IN (SELECT value FROM json_each(?))
ORDER BY operation_id DESC LIMIT ?;

-- name: count_by_state
SELECT state, count(*) AS n FROM operations GROUP BY state;

-- {clause}: the WHERE clause store/finding.py builds for the query (or nothing).
-- name: count_found
SELECT count(*) AS n FROM operations{clause};

-- name: find
SELECT {operation} FROM operations{clause} ORDER BY operation_id DESC LIMIT ? OFFSET ?;

-- name: history
SELECT * FROM transitions WHERE operation_id = ? ORDER BY seq;

-- name: attempts
SELECT * FROM attempts WHERE operation_id = ? ORDER BY started_at, rowid;

-- name: observations
SELECT * FROM observations WHERE operation_id = ? ORDER BY id;

-- name: known_events
SELECT event_id FROM observations WHERE event_id IN (SELECT value FROM json_each(?));

-- name: insert_transition
INSERT INTO transitions (operation_id, at, actor, from_state, to_state, evidence, cause,
    remote_job_id)
VALUES (:operation_id, :at, :actor, :from_state, :to_state, :evidence, :cause,
    :remote_job_id);

-- name: insert_observation
INSERT INTO observations (operation_id, source, observed_at, remote_state, remote_status,
    provider_updated_at, progress, ref, event_id, last_seen_at, seen_count, last_request_id,
    last_progress, closed_at, usage)
VALUES (:operation_id, :source, :observed_at, :remote_state, :remote_status,
    :provider_updated_at, :progress, :ref, :event_id, :last_seen_at, :seen_count,
    :last_request_id, :last_progress, :closed_at, :usage);

-- A read that sees the open run's remote state again: one row updated, nothing appended.
-- name: fold_observation
UPDATE observations SET last_seen_at = :last_seen_at, seen_count = seen_count + 1,
    last_request_id = :last_request_id, last_progress = :last_progress
WHERE operation_id = :operation_id AND closed_at IS NULL AND source = :source
    AND remote_state IS :remote_state AND remote_status = :remote_status
RETURNING id;

-- Closes the open runs of these operations (ids, with the time each closes at).
-- name: close_runs
UPDATE observations SET closed_at = v.at
FROM (SELECT i.value AS id, json_extract(?2, '$[' || i.key || ']') AS at
    FROM json_each(?1) AS i) AS v
WHERE observations.operation_id = v.id AND observations.closed_at IS NULL
RETURNING *;

-- name: insert_attempt
INSERT INTO attempts (attempt_id, operation_id, kind, fence, actor, started_at, request,
    finished_at, outcome, http_status, provider_request_id, detail)
VALUES (:attempt_id, :operation_id, :kind, :fence, :actor, :started_at, :request,
    :finished_at, :outcome, :http_status, :provider_request_id, :detail);

-- name: finish_attempt
UPDATE attempts SET finished_at = :finished_at, outcome = :outcome,
    http_status = :http_status, provider_request_id = :provider_request_id,
    detail = :detail
WHERE attempt_id = :attempt_id;

-- :clock is the release's time on the machine clock.
-- name: release_lease_row
UPDATE leases SET released_at = :released_at, clock_released = :clock
WHERE operation_id = :operation_id AND fence = :fence;

-- Up to `limit` due operations, oldest due first. due_at (the lease's expiry while leased,
-- else the poll time) is derived by the database and read through the due index; a leased
-- operation is claimable only once its lease ended on the machine clock too (0012), whatever
-- the claimer's own clock says: ?1 now, ?2 the machine clock's name, ?3 its reading.
-- {only}: claimable_only, to claim one operation, or nothing.
-- name: claimable
SELECT operation_id, due_at FROM operations WHERE due_at <= ?
    AND (lease_owner IS NULL OR lease_until IS NULL OR lease_clock IS NOT ? OR lease_until <= ?)
    {only} ORDER BY due_at LIMIT ?;

-- name: claimable_only
AND operation_id = ?

-- Only the operations the claimer has a provider for: HTTP ones, and those of the code
-- providers it has (a JSON list). The filter rides along the due index.
-- name: claimable_drives
AND (provider_kind = 'http' OR provider IN (SELECT value FROM json_each(?)))

-- The claim leaves the poll time alone. Parameters: owner, expiry (the claimer's
-- reckoning), end on the machine clock, its name, the claimable ids (a JSON list).
-- name: claim
UPDATE operations SET lease_owner = ?, lease_expires_at = ?, lease_until = ?, lease_clock = ?,
    fence = fence + 1
WHERE operation_id IN (SELECT value FROM json_each(?)) RETURNING {operation};

-- Lease history keeps one row per tenure: the same owner claiming an operation again (its
-- own release was the last lease event) moves its row to the new fence, so polling adds no
-- row; a row is inserted only when the operation changes hands. Both run for every claim of
-- a batch (executemany): new_tenure finds the moved rows already at the new fence (a row of
-- another owner there is still refused by the primary key).
-- Parameters: ?1 fence, ?2 owner, ?3 now, ?4 expires, ?5 operation id, and on the machine
-- clock ?6 its name, ?7 now, ?8 expires.
-- name: extend_tenure
UPDATE leases SET fence = ?1, expires_at = ?4, released_at = NULL, clock_expires = ?8,
    clock_released = NULL
WHERE operation_id = ?5 AND owner = ?2 AND released_at IS NOT NULL AND clock IS ?6 AND fence =
    (SELECT max(fence) FROM leases WHERE operation_id = ?5);

-- name: new_tenure
INSERT INTO leases (operation_id, fence, owner, acquired_at, expires_at, clock, clock_acquired,
    clock_expires)
SELECT ?5, ?1, ?2, ?3, ?4, ?6, ?7, ?8
WHERE NOT EXISTS (SELECT 1 FROM leases WHERE operation_id = ?5 AND fence = ?1 AND owner = ?2);

-- Parameters: ?1 expires (the holder's reckoning), ?2 operation id, ?3 fence, on the machine
-- clock ?4 its name, ?5 the lease's new end.
-- name: renew
UPDATE operations SET lease_expires_at = ?1, lease_until = ?5, lease_clock = ?4
WHERE operation_id = ?2 AND fence = ?3 AND lease_owner IS NOT NULL;

-- name: renew_lease_row
UPDATE leases SET expires_at = ?1, clock_expires = ?5, clock = ?4
WHERE operation_id = ?2 AND fence = ?3;

-- Parameters: ?1 the poll time decided (or NULL), ?2 now, ?3 operation id, ?4 fence.
-- name: release
UPDATE operations SET lease_owner = NULL, lease_expires_at = NULL, lease_until = NULL,
    lease_clock = NULL,
    next_poll_at = CASE WHEN poll_requested = 1 AND ?1 IS NOT NULL THEN ?2 ELSE ?1 END,
    poll_requested = 0, version = version + 1
WHERE operation_id = ?3 AND fence = ?4 AND lease_owner IS NOT NULL;

-- name: next_due
SELECT min(due_at) AS due FROM operations WHERE due_at IS NOT NULL;

-- The next due time among what a claimer with those code providers claims (claimable_drives).
-- name: next_due_drives
SELECT due_at AS due FROM operations
WHERE due_at IS NOT NULL AND (provider_kind = 'http' OR provider IN (SELECT value FROM json_each(?)))
ORDER BY due_at LIMIT 1;

-- name: leases
SELECT * FROM leases ORDER BY operation_id, fence;

-- name: leases_of
SELECT * FROM leases WHERE operation_id = ? ORDER BY operation_id, fence;

-- name: audit_head
SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1;

-- name: insert_audit
INSERT INTO audit_log (seq, operation_id, entry, prev_hash, hash) VALUES (?, ?, ?, ?, ?);

-- name: audit_rows
SELECT * FROM audit_log ORDER BY seq;

-- name: audit_rows_of
SELECT * FROM audit_log WHERE operation_id = ? ORDER BY seq;

-- Whether the audit chain is keyed (0011), and the head entry that tells it for a chain
-- begun before that migration.
-- name: audit_keying
SELECT keyed, key_check FROM audit_keying;

-- name: insert_audit_keying
INSERT INTO audit_keying (one, keyed, key_check) VALUES (1, ?, ?) ON CONFLICT DO NOTHING;

-- name: audit_head_entry
SELECT prev_hash, entry, hash FROM audit_log ORDER BY seq DESC LIMIT 1;

-- A status read whose answer equals the last one its owner read (store/seen.py): the record
-- moves as a folded unchanged read moves it (update time, poll count, poll time as
-- poll_on_release decides it) and the lease is given back, only while the record is the
-- one that owner's last write left (version, fence) and its status run is still open.
-- name: seen_again
UPDATE operations SET updated_at = :at, poll_count = :poll_count,
    next_poll_at = CASE WHEN poll_requested = 1 AND :next_poll_at IS NOT NULL
        THEN min(:next_poll_at, :at) ELSE :next_poll_at END, poll_requested = 0,
    version = version + 1,
    lease_owner = NULL, lease_expires_at = NULL, lease_until = NULL, lease_clock = NULL
WHERE operation_id = :operation_id AND version = :version AND fence = :fence
    AND EXISTS (SELECT 1 FROM observations WHERE operation_id = :operation_id
        AND closed_at IS NULL AND source = 'status')
RETURNING version, next_poll_at;

-- The open status run of an operation seen_again moved: one more read, at :at.
-- name: fold_seen_again
UPDATE observations SET last_seen_at = :at, seen_count = seen_count + 1,
    last_request_id = :request_id
WHERE operation_id = :operation_id AND closed_at IS NULL AND source = 'status';
