-- The outbox of notices to people, PostgreSQL dialect of sql/sqlite/0021_notices.sql.
CREATE TABLE notices (
    event_id      text COLLATE "C" PRIMARY KEY,
    type          text NOT NULL,
    operation_id  text COLLATE "C",
    created_at    timestamptz NOT NULL,
    document      text NOT NULL,
    due_at        timestamptz,
    claims        integer NOT NULL DEFAULT 0,
    tries         integer NOT NULL DEFAULT 0,
    delivered_at  timestamptz,
    gave_up_at    timestamptz,
    last_error    text
);
CREATE INDEX notices_due ON notices (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX notices_operation ON notices (operation_id);
CREATE TABLE notice_attempts (
    seq          bigserial PRIMARY KEY,
    event_id     text COLLATE "C" NOT NULL REFERENCES notices(event_id),
    endpoint     text NOT NULL,
    at           timestamptz NOT NULL,
    outcome      text NOT NULL,
    http_status  integer,
    detail       text
);
CREATE INDEX notice_attempts_event ON notice_attempts (event_id);
