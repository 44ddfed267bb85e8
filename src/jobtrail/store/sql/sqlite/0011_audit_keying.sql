-- Whether the audit chain is keyed (issue 19), fixed with its first entry: `keyed` 1 with
-- `key_check` = HMAC-SHA256(key, "jobtrail audit key check v1") in hex, or `keyed` 0 and no
-- check. A store opened with another key (or none, or one for an unkeyed chain) compares
-- its own check value with this row and refuses to write: links made with another key would
-- break the chain for good. The check value tells whether a key is the chain's, never the
-- key. One row at most, written once, never changed.
CREATE TABLE audit_keying (
    one        INTEGER PRIMARY KEY CHECK (one = 1),
    keyed      INTEGER NOT NULL CHECK (keyed IN (0, 1)),
    key_check  TEXT,
    CHECK ((keyed = 1) = (key_check IS NOT NULL))
);
CREATE TRIGGER audit_keying_no_update BEFORE UPDATE ON audit_keying
BEGIN SELECT RAISE(ABORT, 'the audit keying is fixed'); END;
CREATE TRIGGER audit_keying_no_delete BEFORE DELETE ON audit_keying
BEGIN SELECT RAISE(ABORT, 'the audit keying is fixed'); END;
