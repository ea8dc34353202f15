-- 0034_drills: restore drills (issue 27 item 1, docs/hosts-and-gates.md "Restore drills").
-- A drill restores a pool's durable_state artifacts from the durable path onto a fresh
-- directory of scratch, verifies their sha256, starts the host's pinned stack image against
-- the restored copy and runs the pool's gate workload until its first success; every step
-- is timed. It runs as a job of kind drill on a drained host (the host goes diagnosing and
-- back to drained, as active diagnostics do). One row per finished drill.
ALTER TABLE jobs DROP CONSTRAINT jobs_kind_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_kind_check
    CHECK (kind IN ('provision', 'gate', 'diagnostics', 'stop', 'drill'));

CREATE TABLE drills (
    seq                  bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    host_id              uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
    pool_id              uuid NOT NULL,
    job_id               uuid UNIQUE REFERENCES jobs (id) ON DELETE SET NULL,
    stack_id             uuid,
    verdict              text NOT NULL CHECK (verdict IN ('pass', 'fail')),
    reason               text NOT NULL,
    restore_seconds      double precision,
    start_seconds        double precision,
    first_work_seconds   double precision,
    recovery_seconds     double precision,
    max_recovery_seconds double precision,
    bytes_restored       bigint NOT NULL DEFAULT 0 CHECK (bytes_restored >= 0),
    steps                jsonb NOT NULL CHECK (jsonb_typeof(steps) = 'array'),
    started_at           timestamptz NOT NULL,
    finished_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX drills_host_seq ON drills (host_id, seq);
CREATE INDEX drills_pool_seq ON drills (pool_id, seq);

COMMENT ON TABLE drills IS 'Restore drills: the measured time to restore a pool''s durable state onto scratch, start its stack and get a first accepted unit of work.';
COMMENT ON COLUMN drills.seq IS 'Order of drills; the keyset for pagination.';
COMMENT ON COLUMN drills.id IS 'Public identifier.';
COMMENT ON COLUMN drills.host_id IS 'The drained host it ran on.';
COMMENT ON COLUMN drills.pool_id IS 'The host''s pool when it ran (whose durable_state and drill were used).';
COMMENT ON COLUMN drills.job_id IS 'The job (kind drill) that ran it.';
COMMENT ON COLUMN drills.stack_id IS 'The host''s current stack (whose image was started).';
COMMENT ON COLUMN drills.verdict IS 'pass (every step succeeded within max_recovery_seconds) or fail.';
COMMENT ON COLUMN drills.reason IS 'Why, in words: the artifact that was missing or did not match, the step that failed, or the time against the maximum.';
COMMENT ON COLUMN drills.restore_seconds IS 'Copy from the durable path and checksum verification (NULL: not reached).';
COMMENT ON COLUMN drills.start_seconds IS 'Starting the stack''s container against the restored copy.';
COMMENT ON COLUMN drills.first_work_seconds IS 'The gate workload, until its first success (every attempt).';
COMMENT ON COLUMN drills.recovery_seconds IS 'The measured recovery time: restore + start + first work.';
COMMENT ON COLUMN drills.max_recovery_seconds IS 'The pool''s drill.max_recovery_seconds when it ran.';
COMMENT ON COLUMN drills.bytes_restored IS 'Bytes copied from the durable path.';
COMMENT ON COLUMN drills.steps IS 'Each step: name, status, seconds, message (host output cleaned and bounded).';
COMMENT ON COLUMN drills.started_at IS 'When the job started.';
COMMENT ON COLUMN drills.finished_at IS 'When the verdict was written.';

-- drill.completed: one event per finished drill (and its webhook deliveries).
CREATE FUNCTION events_drills() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    pool uuid;
BEGIN
    SELECT h.pool_id INTO pool FROM hosts h WHERE h.id = NEW.host_id;
    PERFORM events_emit('drill.completed', coalesce(pool, NEW.pool_id), NEW.host_id,
                        jsonb_build_object('drill_id', NEW.id, 'job_id', NEW.job_id,
                                           'verdict', NEW.verdict, 'reason', NEW.reason,
                                           'recovery_seconds', NEW.recovery_seconds,
                                           'max_recovery_seconds', NEW.max_recovery_seconds));
    RETURN NULL;
END $$;
CREATE TRIGGER events_drills AFTER INSERT ON drills
    FOR EACH ROW EXECUTE FUNCTION events_drills();
COMMENT ON FUNCTION events_drills() IS 'Event drill.completed.';
