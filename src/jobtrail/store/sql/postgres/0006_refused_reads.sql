-- Status reads refused in a row (4xx other than 408/425/429) and when the run began: the
-- schedule backs off on them and stops for a human after [poll] max_refused_reads.
ALTER TABLE operations ADD COLUMN refused_reads integer NOT NULL DEFAULT 0;
ALTER TABLE operations ADD COLUMN refused_since timestamptz;

-- Waits stored before this version could reach past the deadline in force (a far
-- Retry-After): bring each back to it, so those operations settle on time as well.
UPDATE operations SET next_poll_at = create_deadline
 WHERE lease_owner IS NULL AND next_poll_at > create_deadline
   AND state IN ('create_pending', 'create_unknown', 'reconciliation');
UPDATE operations SET next_poll_at = result_deadline
 WHERE lease_owner IS NULL AND next_poll_at > result_deadline
   AND state IN ('accepted', 'observing', 'result_collecting');
UPDATE operations SET next_poll_at = cancel_deadline
 WHERE lease_owner IS NULL AND next_poll_at > cancel_deadline
   AND state IN ('cancel_requested', 'cancelling');
