-- Leases on one clock (issue 19): a lease is judged by the database server's clock
-- (clock_timestamp() in the SQL), never by a worker's. `lease_until` is the lease's end in
-- seconds since the epoch on that clock; lease_expires_at stays the holder's own reckoning
-- (shown to people, and the due index's hint of when to look again); a takeover needs
-- lease_until passed as well. NULL: a lease taken before this migration, judged as before.
ALTER TABLE operations ADD COLUMN lease_until double precision;
-- The lease history on that clock too, so "one owner at a time" can be checked from it.
ALTER TABLE leases ADD COLUMN clock text;
ALTER TABLE leases ADD COLUMN clock_acquired double precision;
ALTER TABLE leases ADD COLUMN clock_expires double precision;
ALTER TABLE leases ADD COLUMN clock_released double precision;
