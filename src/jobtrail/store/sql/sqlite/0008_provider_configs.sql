-- A provider document is stored once, not with every operation submitted under it: each
-- distinct document text is kept here under its SHA-256, and an operation's provider_config
-- holds that key ('sha256:<hex>'). Rows written before this version keep the document itself
-- and are read as they are (store/codec.py, `selected`). A document never changes or goes:
-- the operations that name it are driven by it, archived ones included.
CREATE TABLE provider_configs (
    digest    TEXT PRIMARY KEY,
    document  TEXT NOT NULL
);
CREATE TRIGGER provider_configs_no_update BEFORE UPDATE ON provider_configs
BEGIN SELECT RAISE(ABORT, 'provider documents are write-once'); END;
CREATE TRIGGER provider_configs_no_delete BEFORE DELETE ON provider_configs
BEGIN SELECT RAISE(ABORT, 'provider documents are write-once'); END;
