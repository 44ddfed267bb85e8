-- The operation ledger, PostgreSQL dialect of sql/sqlite/0001_ledger.sql. Times are
-- timestamptz; JSON columns hold canonical JSON text (the codec is shared with SQLite).
-- Ids are compared byte-wise (COLLATE "C"), so ULID order is creation order in any locale.

CREATE TABLE operations (
    operation_id        text COLLATE "C" PRIMARY KEY,
    op_key              text COLLATE "C" NOT NULL UNIQUE,
    provider            text NOT NULL,
    provider_config     text NOT NULL,
    capabilities        text NOT NULL,
    request             text NOT NULL,
    fingerprint         text NOT NULL,
    idempotency_token   text NOT NULL UNIQUE,
    trace_id            text NOT NULL,
    actor               text NOT NULL,
    authorized_by       text,
    reason              text,
    created_at          timestamptz NOT NULL,
    create_deadline     timestamptz NOT NULL,
    cancel_timeout_s    double precision NOT NULL,
    result_deadline     timestamptz NOT NULL,
    state               text NOT NULL,
    remote_job_id       text,
    remote_state        text,
    remote_status       text,
    progress            text,
    status_url          text,
    candidate_job_id    text,
    conflicting_job_ids text NOT NULL DEFAULT '[]',
    next_poll_at        timestamptz,
    poll_count          integer NOT NULL DEFAULT 0,
    create_attempts     integer NOT NULL DEFAULT 0,
    inflight_attempt    text,
    cancel_intent       text,
    cancel_deadline     timestamptz,
    cancel_sent         integer NOT NULL DEFAULT 0,
    inline_result       text,
    result              text,
    fence               bigint NOT NULL DEFAULT 0,
    lease_owner         text,
    lease_expires_at    timestamptz,
    version             bigint NOT NULL DEFAULT 0,
    updated_at          timestamptz
);

-- The claim query reads this index alone: an operation is due when next_poll_at <= now.
-- While leased, next_poll_at holds the lease's expiry, so a crashed worker's operations
-- become due again exactly when its leases run out.
CREATE INDEX operations_due ON operations (next_poll_at) WHERE next_poll_at IS NOT NULL;
CREATE INDEX operations_state ON operations (state, operation_id);
CREATE INDEX operations_remote_job ON operations (provider, remote_job_id);

CREATE TABLE transitions (
    seq            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    operation_id   text COLLATE "C" NOT NULL REFERENCES operations (operation_id),
    at             timestamptz NOT NULL,
    actor          text NOT NULL,
    from_state     text NOT NULL,
    to_state       text NOT NULL,
    evidence       text NOT NULL,
    cause          text NOT NULL,
    remote_job_id  text
);
CREATE INDEX transitions_operation ON transitions (operation_id, seq);

-- `seq` stands in for SQLite's rowid: the order attempts were recorded in.
CREATE TABLE attempts (
    attempt_id          text COLLATE "C" PRIMARY KEY,
    seq                 bigint GENERATED ALWAYS AS IDENTITY,
    operation_id        text COLLATE "C" NOT NULL REFERENCES operations (operation_id),
    kind                text NOT NULL,
    fence               bigint NOT NULL,
    actor               text NOT NULL,
    started_at          timestamptz NOT NULL,
    request             text NOT NULL,
    finished_at         timestamptz,
    outcome             text,
    http_status         integer,
    provider_request_id text,
    detail              text
);
CREATE INDEX attempts_operation ON attempts (operation_id, started_at, seq);

CREATE TABLE observations (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    operation_id        text COLLATE "C" NOT NULL REFERENCES operations (operation_id),
    source              text NOT NULL,
    observed_at         timestamptz NOT NULL,
    remote_state        text,
    remote_status       text NOT NULL,
    provider_updated_at text,
    progress            text,
    ref                 text,
    event_id            text UNIQUE
);
CREATE INDEX observations_operation ON observations (operation_id, id);

CREATE TABLE leases (
    operation_id  text COLLATE "C" NOT NULL,
    fence         bigint NOT NULL,
    owner         text NOT NULL,
    acquired_at   timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    released_at   timestamptz,
    PRIMARY KEY (operation_id, fence)
);

CREATE TABLE audit_log (
    seq           bigint PRIMARY KEY,
    operation_id  text COLLATE "C",
    entry         text NOT NULL,
    prev_hash     text NOT NULL,
    hash          text NOT NULL
);
CREATE INDEX audit_operation ON audit_log (operation_id, seq);

-- The head of the one global audit chain. Writers lock this row (last thing in their
-- transaction) before linking entries to it, so no two transactions share a previous hash.
CREATE TABLE audit_head (
    one   boolean PRIMARY KEY DEFAULT true CHECK (one),
    seq   bigint NOT NULL,
    hash  text
);
INSERT INTO audit_head (seq, hash) VALUES (0, NULL);

-- History and audit are append-only: the database itself refuses changes.
CREATE FUNCTION jobtrail_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE TRIGGER transitions_append_only BEFORE UPDATE OR DELETE ON transitions
    FOR EACH ROW EXECUTE FUNCTION jobtrail_append_only();
CREATE TRIGGER transitions_no_truncate BEFORE TRUNCATE ON transitions
    FOR EACH STATEMENT EXECUTE FUNCTION jobtrail_append_only();
CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION jobtrail_append_only();
CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION jobtrail_append_only();
CREATE TRIGGER observations_append_only BEFORE UPDATE OR DELETE ON observations
    FOR EACH ROW EXECUTE FUNCTION jobtrail_append_only();
CREATE TRIGGER observations_no_truncate BEFORE TRUNCATE ON observations
    FOR EACH STATEMENT EXECUTE FUNCTION jobtrail_append_only();
