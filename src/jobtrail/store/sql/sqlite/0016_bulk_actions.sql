-- Bulk actions (core/bulk.py): one person's cancel, extend or mark-failed of many
-- operations from the dashboard. Written once, after every item was tried, with each
-- item's outcome (done, refused, skipped) in `document`; the bulk id is the form's, so a
-- form sent again finds its action here instead of acting twice. Items name operations by
-- id only: a pruned operation leaves its bulk record readable.
CREATE TABLE bulk_actions (
    bulk_id     TEXT PRIMARY KEY,
    actor       TEXT NOT NULL,
    action      TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    document    TEXT NOT NULL
);
CREATE TRIGGER bulk_actions_no_update BEFORE UPDATE ON bulk_actions
BEGIN SELECT RAISE(ABORT, 'bulk actions are write-once'); END;
