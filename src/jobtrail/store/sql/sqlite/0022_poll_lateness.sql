-- Poll lateness (core/lateness.py): how long after its due time each status read started,
-- counted by the workers in memory per provider and bucket and added here every few seconds
-- in one statement (never a row per read), so every worker on every machine adds into the
-- same rows. `le` is the bucket's upper bound as Prometheus writes it ('0.05' ... '+Inf');
-- `n` counts the reads in that bucket alone (not cumulative), `seconds` is their total
-- lateness. Counters only: no operation's state depends on them.
CREATE TABLE poll_lateness (
    provider  TEXT NOT NULL,
    le        TEXT NOT NULL,
    n         INTEGER NOT NULL,
    seconds   REAL NOT NULL,
    PRIMARY KEY (provider, le)
);
