-- Bulk actions, PostgreSQL dialect of sql/sqlite/0016_bulk_actions.sql: written once, after
-- every item was tried, each item's outcome in `document`.
CREATE TABLE bulk_actions (
    bulk_id     text COLLATE "C" PRIMARY KEY,
    actor       text NOT NULL,
    action      text NOT NULL,
    created_at  timestamptz NOT NULL,
    document    text NOT NULL
);

CREATE FUNCTION jobtrail_bulk_actions_no_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'bulk actions are write-once' USING ERRCODE = 'restrict_violation';
END;
$$;
CREATE TRIGGER bulk_actions_no_update BEFORE UPDATE ON bulk_actions
    FOR EACH ROW EXECUTE FUNCTION jobtrail_bulk_actions_no_update();
