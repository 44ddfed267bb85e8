-- Results kept in the ledger's own database (`--results db:`), so workers on several
-- machines need no shared filesystem: one row per stored result, named by its sha256, and
-- its bytes in chunks of at most 1 MiB. Rows are written once and never changed.
CREATE TABLE result_blobs (
    digest TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    chunks INTEGER NOT NULL,
    stored_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE result_chunks (
    digest TEXT NOT NULL REFERENCES result_blobs (digest),
    seq INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (digest, seq)
);
