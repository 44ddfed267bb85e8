-- Packed operations (`jobtrail prune --pack-after AGE`, ledger/packing.py): a finished
-- operation's rows (the operation, its transitions, attempts, observations, leases and
-- audit entries, encoded as the archive encodes one operation) replaced in place by one
-- zstd-compressed row. `dictionary_id` names the dictionary it was compressed with (NULL:
-- plain zstd, before enough operations had finished to train one). The packing checkpoint
-- in the audit chain binds each row's bytes and its dictionary's by sha256, so any edit or
-- removal of either is named by `audit verify`. Rows are written once and never changed.
CREATE TABLE pack_dictionaries (
    dictionary_id  INTEGER PRIMARY KEY,
    digest         TEXT NOT NULL,
    data           BYTEA NOT NULL,
    trained_at     TIMESTAMPTZ NOT NULL,
    samples        INTEGER NOT NULL
);
CREATE TABLE packed_operations (
    operation_id   TEXT PRIMARY KEY,
    dictionary_id  INTEGER REFERENCES pack_dictionaries (dictionary_id),
    data           BYTEA NOT NULL
);
