-- Audit entries bind the rows they cover by hash, PostgreSQL dialect of
-- sql/sqlite/0017_audit_by_hash.sql: the hashes become bytea, the existing ones converted
-- from their hex text (what is linked stays the hex text, so every entry verifies as before).
ALTER TABLE audit_log
    ALTER COLUMN prev_hash TYPE bytea USING decode(prev_hash, 'hex'),
    ALTER COLUMN hash TYPE bytea USING decode(hash, 'hex');
ALTER TABLE audit_head ALTER COLUMN hash TYPE bytea USING decode(hash, 'hex');
