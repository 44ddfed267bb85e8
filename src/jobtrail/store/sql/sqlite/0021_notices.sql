-- The outbox of notices to people (core/notices.py): one row per event, written in the
-- transaction of the transition it announces (or alone, for a census finding), delivered
-- later by the notifier (services/notify.py). `due_at` is when the next delivery round may
-- start (NULL once delivered or given up); `claims` rises on every claim, so that two
-- notifiers never deliver one round twice. No foreign key: a census finding names no
-- operation, and a pruned operation leaves its notices readable.
CREATE TABLE notices (
    event_id      TEXT PRIMARY KEY,
    type          TEXT NOT NULL,
    operation_id  TEXT,
    created_at    TEXT NOT NULL,
    document      TEXT NOT NULL,
    due_at        TEXT,
    claims        INTEGER NOT NULL DEFAULT 0,
    tries         INTEGER NOT NULL DEFAULT 0,
    delivered_at  TEXT,
    gave_up_at    TEXT,
    last_error    TEXT
);
CREATE INDEX notices_due ON notices (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX notices_operation ON notices (operation_id);
-- Every delivery attempt to every endpoint. `endpoint` is a label (never the URL, which may
-- hold a secret such as a Slack webhook's path).
CREATE TABLE notice_attempts (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id     TEXT NOT NULL REFERENCES notices(event_id),
    endpoint     TEXT NOT NULL,
    at           TEXT NOT NULL,
    outcome      TEXT NOT NULL,
    http_status  INTEGER,
    detail       TEXT
);
CREATE INDEX notice_attempts_event ON notice_attempts (event_id);
