-- 0021_rollouts: stack rollouts in waves (issue 14, docs/rollouts.md §2, §3).
-- POST /v1/pools/{id}/rollouts writes a rollout, its hosts in scope (ordered by name,
-- assigned to waves: the canary wave first, then waves of max_unavailable_hosts) and the
-- pool's hosts it skipped, in one transaction (db/rollouts.c). The workers' driver
-- (service/rollout.c, planner/rollout.h) moves each host pending → draining →
-- provisioning → gating → comparing → resuming → done with durable jobs of the existing
-- kinds, soaks each wave, and on a failure takes every touched host back to the stack
-- it had (rollback_step). Every change of a rollout's state or wave, and of a host's
-- step, is an event (rollout, rollout.host).
--
-- The host never becomes ready before its comparison: after the provisioning
-- (provisioned) the driver drains it again and gates it while it is draining, so that
-- an accepted gate leaves it drained (gate_accepted draining → drained, the accepted gate
-- set); the driver resumes it after the comparison. No new state machine row is needed.

CREATE TABLE rollouts (
    seq                   bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id                    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    pool_id               uuid NOT NULL REFERENCES pools (id) ON DELETE CASCADE,
    stack_id              uuid NOT NULL REFERENCES stacks (id) ON DELETE RESTRICT,
    state                 text NOT NULL DEFAULT 'running'
                          CHECK (state IN ('running', 'paused', 'rolling_back', 'succeeded',
                                           'rolled_back', 'aborted', 'failed')),
    canary                integer NOT NULL CHECK (canary BETWEEN 0 AND 100),
    max_unavailable       jsonb NOT NULL CHECK (jsonb_typeof(max_unavailable) IN ('number', 'string')),
    max_unavailable_hosts integer NOT NULL CHECK (max_unavailable_hosts >= 1),
    min_baseline_ratio    double precision CHECK (min_baseline_ratio > 0 AND min_baseline_ratio <= 10),
    soak_seconds          integer NOT NULL CHECK (soak_seconds BETWEEN 0 AND 86400),
    pause_after_canary    boolean NOT NULL,
    force                 boolean NOT NULL,
    waves                 integer NOT NULL CHECK (waves >= 1),
    current_wave          integer NOT NULL DEFAULT 0 CHECK (current_wave >= 0),
    wave_state            text NOT NULL DEFAULT 'running' CHECK (wave_state IN ('running', 'soaking')),
    wave_started_at       timestamptz,
    soak_until            timestamptz,
    canary_paused         boolean NOT NULL DEFAULT false,
    error                 text CHECK (length(error) <= 4000),
    evidence              jsonb,
    failed_hosts          uuid[] NOT NULL DEFAULT '{}',
    pause_requested       boolean NOT NULL DEFAULT false,
    created_by            text NOT NULL,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    finished_at           timestamptz,
    checked_at            timestamptz NOT NULL DEFAULT '-infinity',
    CHECK ((state IN ('running', 'paused', 'rolling_back')) = (finished_at IS NULL))
);
-- At most one active rollout per pool.
CREATE UNIQUE INDEX rollouts_one_active ON rollouts (pool_id)
    WHERE state IN ('running', 'paused', 'rolling_back');
CREATE INDEX rollouts_due ON rollouts (checked_at) WHERE state IN ('running', 'paused', 'rolling_back');
CREATE INDEX rollouts_pool_seq ON rollouts (pool_id, seq);
CREATE INDEX rollouts_state_seq ON rollouts (state, seq);

COMMENT ON TABLE rollouts IS 'Stack rollouts of a pool (docs/rollouts.md): the hosts in scope moved to stack_id in waves with canary, gate and throughput checks; rolled back to their previous stacks on a failure.';
COMMENT ON COLUMN rollouts.seq IS 'Creation order; the keyset for pagination.';
COMMENT ON COLUMN rollouts.id IS 'Public identifier.';
COMMENT ON COLUMN rollouts.pool_id IS 'The pool rolled out.';
COMMENT ON COLUMN rollouts.stack_id IS 'The target stack.';
COMMENT ON COLUMN rollouts.state IS 'running, paused, rolling_back; terminal succeeded, rolled_back, aborted (aborted before any host was touched), failed (the rollback itself failed: hosts left out of service, in failed_hosts).';
COMMENT ON COLUMN rollouts.canary IS 'Hosts in the canary wave (wave 0); 0: no canary wave.';
COMMENT ON COLUMN rollouts.max_unavailable IS 'max_unavailable as given: a number of hosts or a percentage string "N%".';
COMMENT ON COLUMN rollouts.max_unavailable_hosts IS 'max_unavailable resolved at creation: never more of the rollout''s hosts out of service at once.';
COMMENT ON COLUMN rollouts.min_baseline_ratio IS 'A host passes when its gate''s throughput divided by the previous stack''s baseline median is at least this; NULL: no throughput check.';
COMMENT ON COLUMN rollouts.soak_seconds IS 'How long each finished wave is watched for monitor isolations before the next starts.';
COMMENT ON COLUMN rollouts.pause_after_canary IS 'Pause after the canary wave''s soak (resume to go on).';
COMMENT ON COLUMN rollouts.force IS 'Created by an admin with force: no baseline needed at the start.';
COMMENT ON COLUMN rollouts.waves IS 'Number of waves.';
COMMENT ON COLUMN rollouts.current_wave IS 'The wave running or soaking (0-based); equals waves once the last one passed.';
COMMENT ON COLUMN rollouts.wave_state IS 'running (hosts of the current wave move) or soaking (all done, watched until soak_until).';
COMMENT ON COLUMN rollouts.wave_started_at IS 'When the current wave started.';
COMMENT ON COLUMN rollouts.soak_until IS 'End of the current wave''s soak (while soaking).';
COMMENT ON COLUMN rollouts.canary_paused IS 'The pause after the canary happened (it happens once).';
COMMENT ON COLUMN rollouts.error IS 'Why it is rolling back, rolled back or failed (the first failure, then the rollback''s).';
COMMENT ON COLUMN rollouts.evidence IS 'What the failure rests on: {host_id, host_name, step, job_id, gate_run_id, verdict, reason, comparison, isolation}.';
COMMENT ON COLUMN rollouts.failed_hosts IS 'Hosts whose rollback failed (left out of service), when the rollout ended failed.';
COMMENT ON COLUMN rollouts.pause_requested IS 'Reserved for the engine (unused).';
COMMENT ON COLUMN rollouts.created_by IS 'JWT sub of the creator.';
COMMENT ON COLUMN rollouts.created_at IS 'When it was created.';
COMMENT ON COLUMN rollouts.updated_at IS 'Last change.';
COMMENT ON COLUMN rollouts.finished_at IS 'When it ended (a terminal state).';
COMMENT ON COLUMN rollouts.checked_at IS 'When a driver last looked at it (the oldest first).';

CREATE TABLE rollout_hosts (
    rollout_id                uuid NOT NULL REFERENCES rollouts (id) ON DELETE CASCADE,
    host_id                   uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
    host_name                 text NOT NULL,
    position                  integer NOT NULL CHECK (position >= 0),
    wave                      integer NOT NULL CHECK (wave >= 0),
    from_stack_id             uuid REFERENCES stacks (id) ON DELETE RESTRICT,
    to_stack_id               uuid NOT NULL REFERENCES stacks (id) ON DELETE RESTRICT,
    step                      text NOT NULL DEFAULT 'pending'
                              CHECK (step IN ('pending', 'draining', 'provisioning', 'gating',
                                              'comparing', 'resuming', 'done', 'failed', 'skipped')),
    rollback_step             text CHECK (rollback_step IN ('pending', 'draining', 'provisioning',
                                                            'gating', 'resuming', 'done', 'failed',
                                                            'not_needed')),
    provision_job_id          uuid REFERENCES jobs (id) ON DELETE SET NULL,
    gate_job_id               uuid REFERENCES jobs (id) ON DELETE SET NULL,
    gate_run_id               uuid REFERENCES gate_runs (id) ON DELETE SET NULL,
    rollback_provision_job_id uuid REFERENCES jobs (id) ON DELETE SET NULL,
    rollback_gate_job_id      uuid REFERENCES jobs (id) ON DELETE SET NULL,
    comparison                jsonb,
    error                     text CHECK (length(error) <= 4000),
    started_at                timestamptz,
    finished_at               timestamptz,
    rollback_started_at       timestamptz,
    rollback_finished_at      timestamptz,
    updated_at                timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (rollout_id, host_id),
    UNIQUE (rollout_id, position)
);
CREATE INDEX rollout_hosts_host ON rollout_hosts (host_id);

COMMENT ON TABLE rollout_hosts IS 'The hosts in scope of a rollout, one row each: its wave and where it is in the forward (step) and backward (rollback_step) sequence.';
COMMENT ON COLUMN rollout_hosts.rollout_id IS 'The rollout.';
COMMENT ON COLUMN rollout_hosts.host_id IS 'The host.';
COMMENT ON COLUMN rollout_hosts.host_name IS 'Its name at creation (the order).';
COMMENT ON COLUMN rollout_hosts.position IS 'Order within the rollout (by name).';
COMMENT ON COLUMN rollout_hosts.wave IS 'Its wave: 0 is the canary when canary > 0.';
COMMENT ON COLUMN rollout_hosts.from_stack_id IS 'The stack it had at creation: where a rollback takes it.';
COMMENT ON COLUMN rollout_hosts.to_stack_id IS 'The target stack.';
COMMENT ON COLUMN rollout_hosts.step IS 'pending, draining, provisioning, gating, comparing, resuming, done; failed (its failure started the rollback, or the rollback interrupted it in flight: error says which); skipped (not ready, or already on the target, when its turn came).';
COMMENT ON COLUMN rollout_hosts.rollback_step IS 'NULL while the rollout goes forward; then not_needed (never touched), or pending, draining, provisioning, gating, resuming, done, failed (left where the failure left it).';
COMMENT ON COLUMN rollout_hosts.provision_job_id IS 'The provision job to the target stack.';
COMMENT ON COLUMN rollout_hosts.gate_job_id IS 'The gate job on the target stack.';
COMMENT ON COLUMN rollout_hosts.gate_run_id IS 'The gate run that job recorded (judged).';
COMMENT ON COLUMN rollout_hosts.rollback_provision_job_id IS 'The provision job back to from_stack_id.';
COMMENT ON COLUMN rollout_hosts.rollback_gate_job_id IS 'The gate job back on from_stack_id.';
COMMENT ON COLUMN rollout_hosts.comparison IS 'The throughput comparison with the previous stack''s baselines (db_baseline_compare), with ratio, min_ratio and passed.';
COMMENT ON COLUMN rollout_hosts.error IS 'Why the host failed, was interrupted, skipped, or its rollback failed.';
COMMENT ON COLUMN rollout_hosts.started_at IS 'When the rollout drained it.';
COMMENT ON COLUMN rollout_hosts.finished_at IS 'When it was resumed on the target stack (done), skipped or failed.';
COMMENT ON COLUMN rollout_hosts.rollback_started_at IS 'When its rollback began.';
COMMENT ON COLUMN rollout_hosts.rollback_finished_at IS 'When its rollback ended (done or failed).';
COMMENT ON COLUMN rollout_hosts.updated_at IS 'Last change.';

CREATE TABLE rollout_skipped (
    rollout_id uuid NOT NULL REFERENCES rollouts (id) ON DELETE CASCADE,
    host_id    uuid NOT NULL,
    host_name  text NOT NULL,
    state      text NOT NULL,
    reason     text NOT NULL,
    PRIMARY KEY (rollout_id, host_id)
);
COMMENT ON TABLE rollout_skipped IS 'The pool''s hosts a rollout left out at creation (not ready, or already on the target stack).';
COMMENT ON COLUMN rollout_skipped.rollout_id IS 'The rollout.';
COMMENT ON COLUMN rollout_skipped.host_id IS 'The host (no foreign key: the record outlives it).';
COMMENT ON COLUMN rollout_skipped.host_name IS 'Its name then.';
COMMENT ON COLUMN rollout_skipped.state IS 'Its state then.';
COMMENT ON COLUMN rollout_skipped.reason IS 'Why it was left out, in words.';

-- The hosts out of service because of the rollout (docs/rollouts.md §3): in a forward or
-- rollback step that holds them out, or failed and not ready.
CREATE FUNCTION rollout_unavailable(p_rollout uuid) RETURNS integer LANGUAGE sql STABLE AS $$
    SELECT count(*)::integer FROM rollout_hosts rh JOIN hosts h ON h.id = rh.host_id
     WHERE rh.rollout_id = p_rollout
       AND (rh.step IN ('draining', 'provisioning', 'gating', 'comparing', 'resuming')
            OR rh.rollback_step IN ('draining', 'provisioning', 'gating', 'resuming')
            OR ((rh.step = 'failed' OR rh.rollback_step = 'failed') AND h.state <> 'ready'))
$$;
COMMENT ON FUNCTION rollout_unavailable(uuid) IS 'The rollout''s hosts out of service because of it now (the document''s unavailable; the driver never starts a host while it is >= max_unavailable_hosts).';

-- Events: rollout on every change of state or wave; rollout.host on every change of a
-- host's step or rollback_step.
CREATE FUNCTION events_rollouts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.state IS NOT DISTINCT FROM OLD.state
       AND NEW.current_wave IS NOT DISTINCT FROM OLD.current_wave THEN
        RETURN NULL;
    END IF;
    PERFORM events_emit('rollout', NEW.pool_id, NULL,
                        jsonb_build_object('rollout_id', NEW.id, 'state', NEW.state,
                                           'current_wave', NEW.current_wave, 'error', NEW.error));
    RETURN NULL;
END $$;
COMMENT ON FUNCTION events_rollouts() IS 'Emits rollout when a rollout is created or changes state or wave.';
CREATE TRIGGER events_rollouts AFTER INSERT OR UPDATE OF state, current_wave ON rollouts
    FOR EACH ROW EXECUTE FUNCTION events_rollouts();

CREATE FUNCTION events_rollout_hosts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    IF NEW.step IS NOT DISTINCT FROM OLD.step
       AND NEW.rollback_step IS NOT DISTINCT FROM OLD.rollback_step THEN
        RETURN NULL;
    END IF;
    SELECT pool_id, state, current_wave INTO r FROM rollouts WHERE id = NEW.rollout_id;
    PERFORM events_emit('rollout.host', r.pool_id, NEW.host_id,
                        jsonb_build_object('rollout_id', NEW.rollout_id, 'state', r.state,
                                           'current_wave', r.current_wave, 'host_id', NEW.host_id,
                                           'host_name', NEW.host_name, 'step', NEW.step,
                                           'rollback_step', NEW.rollback_step,
                                           'error', NEW.error));
    RETURN NULL;
END $$;
COMMENT ON FUNCTION events_rollout_hosts() IS 'Emits rollout.host when a rollout host changes step or rollback_step.';
CREATE TRIGGER events_rollout_hosts AFTER UPDATE OF step, rollback_step ON rollout_hosts
    FOR EACH ROW EXECUTE FUNCTION events_rollout_hosts();

-- The event type rollout has no dot: the type check allows one-word types from now on.
ALTER TABLE events DROP CONSTRAINT events_type_check;
ALTER TABLE events ADD CONSTRAINT events_type_check
    CHECK (type ~ '^[a-z][a-z_]*(\.[a-z][a-z_]*)*$');
