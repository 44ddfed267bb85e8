-- Status reads refused in a row (4xx other than 408/425/429) and when the run began: the
-- schedule backs off on them and stops for a human after [poll] max_refused_reads.
ALTER TABLE operations ADD COLUMN refused_reads integer NOT NULL DEFAULT 0;
ALTER TABLE operations ADD COLUMN refused_since timestamptz;
