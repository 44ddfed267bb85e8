-- The operation ledger. Times are UTC text 'YYYY-MM-DDTHH:MM:SS.ffffffZ' (fixed width, so
-- text order is time order). JSON columns hold canonical JSON text.

CREATE TABLE operations (
    operation_id        TEXT PRIMARY KEY,
    op_key              TEXT NOT NULL UNIQUE,
    provider            TEXT NOT NULL,
    provider_config     TEXT NOT NULL,
    capabilities        TEXT NOT NULL,
    request             TEXT NOT NULL,
    fingerprint         TEXT NOT NULL,
    idempotency_token   TEXT NOT NULL UNIQUE,
    trace_id            TEXT NOT NULL,
    actor               TEXT NOT NULL,
    authorized_by       TEXT,
    reason              TEXT,
    created_at          TEXT NOT NULL,
    create_deadline     TEXT NOT NULL,
    cancel_timeout_s    REAL NOT NULL,
    result_deadline     TEXT NOT NULL,
    state               TEXT NOT NULL,
    remote_job_id       TEXT,
    remote_state        TEXT,
    remote_status       TEXT,
    progress            TEXT,
    status_url          TEXT,
    candidate_job_id    TEXT,
    conflicting_job_ids TEXT NOT NULL DEFAULT '[]',
    next_poll_at        TEXT,
    poll_count          INTEGER NOT NULL DEFAULT 0,
    create_attempts     INTEGER NOT NULL DEFAULT 0,
    inflight_attempt    TEXT,
    cancel_intent       TEXT,
    cancel_deadline     TEXT,
    cancel_sent         INTEGER NOT NULL DEFAULT 0,
    inline_result       TEXT,
    result              TEXT,
    fence               INTEGER NOT NULL DEFAULT 0,
    lease_owner         TEXT,
    lease_expires_at    TEXT,
    version             INTEGER NOT NULL DEFAULT 0,
    updated_at          TEXT
);

-- The claim query reads this index alone: an operation is due when next_poll_at <= now.
-- While leased, next_poll_at holds the lease's expiry, so a crashed worker's operations
-- become due again exactly when its leases run out.
CREATE INDEX operations_due ON operations (next_poll_at) WHERE next_poll_at IS NOT NULL;
CREATE INDEX operations_state ON operations (state, operation_id);
CREATE INDEX operations_remote_job ON operations (provider, remote_job_id);

CREATE TABLE transitions (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    operation_id   TEXT NOT NULL REFERENCES operations (operation_id),
    at             TEXT NOT NULL,
    actor          TEXT NOT NULL,
    from_state     TEXT NOT NULL,
    to_state       TEXT NOT NULL,
    evidence       TEXT NOT NULL,
    cause          TEXT NOT NULL,
    remote_job_id  TEXT
);
CREATE INDEX transitions_operation ON transitions (operation_id, seq);

CREATE TABLE attempts (
    attempt_id          TEXT PRIMARY KEY,
    operation_id        TEXT NOT NULL REFERENCES operations (operation_id),
    kind                TEXT NOT NULL,
    fence               INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    started_at          TEXT NOT NULL,
    request             TEXT NOT NULL,
    finished_at         TEXT,
    outcome             TEXT,
    http_status         INTEGER,
    provider_request_id TEXT,
    detail              TEXT
);
CREATE INDEX attempts_operation ON attempts (operation_id, started_at);

CREATE TABLE observations (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    operation_id        TEXT NOT NULL REFERENCES operations (operation_id),
    source              TEXT NOT NULL,
    observed_at         TEXT NOT NULL,
    remote_state        TEXT,
    remote_status       TEXT NOT NULL,
    provider_updated_at TEXT,
    progress            TEXT,
    ref                 TEXT,
    event_id            TEXT UNIQUE
);
CREATE INDEX observations_operation ON observations (operation_id, id);

CREATE TABLE leases (
    operation_id  TEXT NOT NULL,
    fence         INTEGER NOT NULL,
    owner         TEXT NOT NULL,
    acquired_at   TEXT NOT NULL,
    expires_at    TEXT NOT NULL,
    released_at   TEXT,
    PRIMARY KEY (operation_id, fence)
);

CREATE TABLE audit_log (
    seq           INTEGER PRIMARY KEY,
    operation_id  TEXT,
    entry         TEXT NOT NULL,
    prev_hash     TEXT NOT NULL,
    hash          TEXT NOT NULL
);
CREATE INDEX audit_operation ON audit_log (operation_id, seq);

-- History and audit are append-only: the database itself refuses changes.
CREATE TRIGGER transitions_no_update BEFORE UPDATE ON transitions
BEGIN SELECT RAISE(ABORT, 'transitions are append-only'); END;
CREATE TRIGGER transitions_no_delete BEFORE DELETE ON transitions
BEGIN SELECT RAISE(ABORT, 'transitions are append-only'); END;
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER observations_no_update BEFORE UPDATE ON observations
BEGIN SELECT RAISE(ABORT, 'observations are append-only'); END;
CREATE TRIGGER observations_no_delete BEFORE DELETE ON observations
BEGIN SELECT RAISE(ABORT, 'observations are append-only'); END;
