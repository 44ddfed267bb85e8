-- Whether the audit chain is keyed (issue 19): see sql/sqlite/0011_audit_keying.sql.
CREATE TABLE audit_keying (
    one        boolean PRIMARY KEY DEFAULT true CHECK (one),
    keyed      boolean NOT NULL,
    key_check  text,
    CHECK (keyed = (key_check IS NOT NULL))
);
CREATE TRIGGER audit_keying_fixed BEFORE UPDATE OR DELETE ON audit_keying
    FOR EACH ROW EXECUTE FUNCTION jobtrail_append_only();
CREATE TRIGGER audit_keying_no_truncate BEFORE TRUNCATE ON audit_keying
    FOR EACH STATEMENT EXECUTE FUNCTION jobtrail_append_only();
