-- Leases on one clock (issue 19). A lease is judged by the ledger's clock, never by a
-- worker's: on SQLite the machine's boot clock (store/machine_clock.py), which every process
-- on the machine reads alike and no time faker moves. `lease_until` is the lease's end on
-- that clock, `lease_clock` which clock (the boot's id): a lease from another boot ended with
-- it. lease_expires_at stays the holder's own reckoning (shown to people, and the due index's
-- hint of when to look again); a takeover needs lease_until passed as well. NULL: a lease
-- taken before this migration, judged as before.
ALTER TABLE operations ADD COLUMN lease_until REAL;
ALTER TABLE operations ADD COLUMN lease_clock TEXT;
-- The lease history on that clock too, so "one owner at a time" can be checked from it.
ALTER TABLE leases ADD COLUMN clock TEXT;
ALTER TABLE leases ADD COLUMN clock_acquired REAL;
ALTER TABLE leases ADD COLUMN clock_expires REAL;
ALTER TABLE leases ADD COLUMN clock_released REAL;
