-- Provider documents stored once, PostgreSQL dialect of sql/sqlite/0008_provider_configs.sql:
-- each distinct document text under its SHA-256; an operation's provider_config holds the key
-- ('sha256:<hex>'), or, in rows written before this version, the document itself.
CREATE TABLE provider_configs (
    digest    text COLLATE "C" PRIMARY KEY,
    document  text NOT NULL
);

CREATE FUNCTION jobtrail_write_once() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is write-once', TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE TRIGGER provider_configs_write_once BEFORE UPDATE OR DELETE ON provider_configs
    FOR EACH ROW EXECUTE FUNCTION jobtrail_write_once();
CREATE TRIGGER provider_configs_no_truncate BEFORE TRUNCATE ON provider_configs
    FOR EACH STATEMENT EXECUTE FUNCTION jobtrail_write_once();
