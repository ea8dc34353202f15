-- 0016_recovery: automatic recovery of a host the health monitor isolated (issue 13, item
-- 3). With the pool's monitor.auto_recover, the isolation (the history row of the event
-- monitor_isolated) opens a recovery in the same transaction; the workers' driver
-- (service/recovery.c, planner/recovery.h) takes it drain → diagnostics → gate → ready,
-- each step a durable job of the existing kinds, and stops at the first failure.
-- The state machine learns recovery_started (the monitor's hold lifted to drain the host,
-- audited host.recovery), recovery_failed (back to quarantine, hold set again) and a
-- gate started on a drained host (the recovery's gate; the API still refuses one). The
-- rows below are generated from planner/host_state.c (`gpufleetd state-machine --sql`); a
-- unit test checks that the newest migration holding them holds them verbatim.

CREATE TABLE host_recoveries (
    seq                 bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    host_id             uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
    pool_id             uuid NOT NULL REFERENCES pools (id) ON DELETE CASCADE,
    cause               text NOT NULL CHECK (length(cause) BETWEEN 1 AND 2000),
    hold_since          timestamptz NOT NULL,
    diag_level          integer NOT NULL CHECK (diag_level BETWEEN 1 AND 3),
    state               text NOT NULL DEFAULT 'running'
                        CHECK (state IN ('running', 'succeeded', 'failed', 'cancelled')),
    step                text NOT NULL DEFAULT 'drain'
                        CHECK (step IN ('drain', 'diagnostics', 'gate')),
    drain_started_at    timestamptz,
    drained_at          timestamptz,
    diagnostics_job_id  uuid REFERENCES jobs (id) ON DELETE SET NULL,
    gate_job_id         uuid REFERENCES jobs (id) ON DELETE SET NULL,
    error               text CHECK (length(error) BETWEEN 1 AND 2000),
    checked_at          timestamptz NOT NULL DEFAULT '-infinity',
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    finished_at         timestamptz,
    CHECK ((state = 'running') = (finished_at IS NULL)),
    CHECK (state <> 'failed' OR error IS NOT NULL)
);
-- At most one running recovery per host.
CREATE UNIQUE INDEX host_recoveries_running ON host_recoveries (host_id) WHERE state = 'running';
CREATE INDEX host_recoveries_due ON host_recoveries (checked_at) WHERE state = 'running';
CREATE INDEX host_recoveries_host_seq ON host_recoveries (host_id, seq);

COMMENT ON TABLE host_recoveries IS 'Automatic recoveries (pool monitor.auto_recover) of hosts the health monitor isolated: drain, diagnostics, gate, ready; stopped at the first failure.';
COMMENT ON COLUMN host_recoveries.seq IS 'Creation order; the keyset for pagination.';
COMMENT ON COLUMN host_recoveries.id IS 'Public identifier.';
COMMENT ON COLUMN host_recoveries.host_id IS 'The host recovered.';
COMMENT ON COLUMN host_recoveries.pool_id IS 'Its pool when the recovery began.';
COMMENT ON COLUMN host_recoveries.cause IS 'Why the monitor isolated the host (the quarantine reason).';
COMMENT ON COLUMN host_recoveries.hold_since IS 'When the monitor set the quarantine hold; only that hold is lifted (a hold set again since, e.g. by a host key mismatch, fails the recovery).';
COMMENT ON COLUMN host_recoveries.diag_level IS 'dcgmi diag level of the diagnostics step (pool monitor.recovery_diagnostics_level, default 2).';
COMMENT ON COLUMN host_recoveries.state IS 'running, succeeded (the host is ready), failed (stopped at a step; the host back in quarantine), cancelled (someone acted on the host).';
COMMENT ON COLUMN host_recoveries.step IS 'The current (or last) step: drain, diagnostics or gate.';
COMMENT ON COLUMN host_recoveries.drain_started_at IS 'When recovery_started lifted the monitor''s hold to drain the host.';
COMMENT ON COLUMN host_recoveries.drained_at IS 'When the host was drained.';
COMMENT ON COLUMN host_recoveries.diagnostics_job_id IS 'The diagnostics job of the second step.';
COMMENT ON COLUMN host_recoveries.gate_job_id IS 'The gate job of the third step.';
COMMENT ON COLUMN host_recoveries.error IS 'Why it failed or was cancelled.';
COMMENT ON COLUMN host_recoveries.checked_at IS 'When a driver last looked at it (the oldest first).';
COMMENT ON COLUMN host_recoveries.created_at IS 'When the isolation opened it.';
COMMENT ON COLUMN host_recoveries.updated_at IS 'Last change.';
COMMENT ON COLUMN host_recoveries.finished_at IS 'When it ended.';

-- The isolation opens the recovery in its own transaction: the history row of
-- monitor_isolated (a host that was not quarantined yet) in a pool with auto_recover.
CREATE FUNCTION recovery_on_isolation() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    h record;
BEGIN
    SELECT h2.pool_id, h2.quarantined_at, h2.quarantine_reason, p.spec INTO h
      FROM hosts h2 JOIN pools p ON p.id = h2.pool_id WHERE h2.id = NEW.host_id;
    IF NOT FOUND OR h.quarantined_at IS NULL
       OR NOT coalesce((h.spec #>> '{monitor,auto_recover}')::boolean, false) THEN
        RETURN NULL;
    END IF;
    INSERT INTO host_recoveries (host_id, pool_id, cause, hold_since, diag_level)
    VALUES (NEW.host_id, h.pool_id,
            left(coalesce(nullif(h.quarantine_reason, ''), nullif(NEW.reason, ''),
                          'isolated by the health monitor'), 2000),
            h.quarantined_at,
            coalesce((h.spec #>> '{monitor,recovery_diagnostics_level}')::int, 2))
    ON CONFLICT (host_id) WHERE state = 'running' DO NOTHING;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION recovery_on_isolation() IS 'Opens a recovery when the monitor isolates a host of a pool with monitor.auto_recover (none while one runs).';
CREATE TRIGGER recovery_on_isolation AFTER INSERT ON host_state_history
    FOR EACH ROW WHEN (NEW.event = 'monitor_isolated' AND NEW.to_state = 'quarantined')
    EXECUTE FUNCTION recovery_on_isolation();

-- The event stream's host.recovery: opened, each step, the end.
CREATE FUNCTION events_host_recoveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM events_emit('host.recovery', NEW.pool_id, NEW.host_id,
                        jsonb_build_object('recovery_id', NEW.id, 'state', NEW.state,
                                           'step', NEW.step, 'error', NEW.error));
    RETURN NULL;
END $$;
COMMENT ON FUNCTION events_host_recoveries() IS 'Emits host.recovery when a recovery opens, changes step or ends.';
CREATE TRIGGER events_host_recoveries AFTER INSERT OR UPDATE OF state, step ON host_recoveries
    FOR EACH ROW EXECUTE FUNCTION events_host_recoveries();

-- The table is reloaded whole: events in place (history rows name them), transitions anew.
DELETE FROM host_transitions;
-- BEGIN generated by planner/host_state.c
INSERT INTO host_events (event, actor, audit_action, refused_when_held) VALUES
    ('provision_requested', 'operator', 'host.provision', true),
    ('provision_started', 'system', NULL, true),
    ('provision_succeeded', 'system', NULL, false),
    ('provision_failed', 'system', NULL, false),
    ('gate_requested', 'operator', 'host.gate', true),
    ('gate_started', 'system', NULL, true),
    ('gate_accepted', 'system', NULL, false),
    ('gate_investigate', 'system', NULL, false),
    ('gate_isolated', 'system', 'host.quarantine', false),
    ('diagnostics_requested', 'operator', 'host.diagnostics', false),
    ('diagnostics_started', 'system', NULL, false),
    ('diagnostics_finished', 'system', NULL, false),
    ('diagnostics_isolated', 'system', 'host.quarantine', false),
    ('drain', 'operator', 'host.drain', true),
    ('drained_when_idle', 'operator', NULL, true),
    ('resume', 'operator', 'host.resume', true),
    ('stop_requested', 'operator', 'host.stop', false),
    ('stop_started', 'system', NULL, false),
    ('stop_done', 'system', NULL, false),
    ('stop_failed', 'system', NULL, false),
    ('key_mismatch', 'system', 'host.quarantine', false),
    ('release', 'admin', 'host.release', false),
    ('job_cancelled', 'system', NULL, false),
    ('job_expired', 'system', NULL, false),
    ('deleted', 'admin', 'host.delete', false),
    ('monitor_unreachable', 'system', NULL, false),
    ('monitor_reachable', 'system', NULL, false),
    ('monitor_isolated', 'system', 'host.quarantine', false),
    ('recovery_started', 'system', 'host.recovery', false),
    ('recovery_failed', 'system', 'host.quarantine', false)
ON CONFLICT (event) DO UPDATE SET actor = EXCLUDED.actor,
    audit_action = EXCLUDED.audit_action, refused_when_held = EXCLUDED.refused_when_held;
INSERT INTO host_transitions (event, from_state, to_state, gate, hold) VALUES
    ('provision_requested', 'registered', 'registered', 'keep', 'keep'),
    ('provision_requested', 'provisioned', 'provisioned', 'keep', 'keep'),
    ('provision_requested', 'ready', 'ready', 'keep', 'keep'),
    ('provision_requested', 'investigating', 'investigating', 'keep', 'keep'),
    ('provision_requested', 'drained', 'drained', 'keep', 'keep'),
    ('provision_requested', 'failed', 'failed', 'keep', 'keep'),
    ('provision_requested', 'stopped', 'stopped', 'keep', 'keep'),
    ('provision_started', 'registered', 'provisioning', 'keep', 'keep'),
    ('provision_started', 'provisioned', 'provisioning', 'keep', 'keep'),
    ('provision_started', 'ready', 'provisioning', 'keep', 'keep'),
    ('provision_started', 'investigating', 'provisioning', 'keep', 'keep'),
    ('provision_started', 'drained', 'provisioning', 'keep', 'keep'),
    ('provision_started', 'failed', 'provisioning', 'keep', 'keep'),
    ('provision_started', 'stopped', 'provisioning', 'keep', 'keep'),
    ('provision_started', 'provisioning', 'provisioning', 'keep', 'keep'),
    ('provision_started', 'draining', 'draining', 'keep', 'keep'),
    ('provision_succeeded', 'provisioning', 'provisioned', 'keep', 'keep'),
    ('provision_succeeded', 'draining', 'drained', 'keep', 'keep'),
    ('provision_failed', 'provisioning', 'failed', 'clear', 'keep'),
    ('provision_failed', 'draining', 'drained', 'clear', 'keep'),
    ('provision_failed', 'registered', 'registered', 'keep', 'keep'),
    ('provision_failed', 'provisioned', 'provisioned', 'keep', 'keep'),
    ('provision_failed', 'ready', 'ready', 'keep', 'keep'),
    ('provision_failed', 'investigating', 'investigating', 'keep', 'keep'),
    ('provision_failed', 'quarantined', 'quarantined', 'keep', 'keep'),
    ('provision_failed', 'drained', 'drained', 'keep', 'keep'),
    ('provision_failed', 'failed', 'failed', 'keep', 'keep'),
    ('provision_failed', 'stopped', 'stopped', 'keep', 'keep'),
    ('provision_failed', 'unreachable', 'unreachable', 'keep', 'keep'),
    ('gate_requested', 'registered', 'registered', 'keep', 'keep'),
    ('gate_requested', 'provisioned', 'provisioned', 'keep', 'keep'),
    ('gate_requested', 'ready', 'ready', 'keep', 'keep'),
    ('gate_requested', 'investigating', 'investigating', 'keep', 'keep'),
    ('gate_requested', 'failed', 'failed', 'keep', 'keep'),
    ('gate_started', 'registered', 'gating', 'keep', 'keep'),
    ('gate_started', 'provisioned', 'gating', 'keep', 'keep'),
    ('gate_started', 'ready', 'gating', 'keep', 'keep'),
    ('gate_started', 'investigating', 'gating', 'keep', 'keep'),
    ('gate_started', 'failed', 'gating', 'keep', 'keep'),
    ('gate_started', 'gating', 'gating', 'keep', 'keep'),
    ('gate_started', 'draining', 'draining', 'keep', 'keep'),
    ('gate_started', 'drained', 'gating', 'keep', 'keep'),
    ('gate_accepted', 'gating', 'ready', 'set', 'keep'),
    ('gate_accepted', 'draining', 'drained', 'set', 'keep'),
    ('gate_investigate', 'gating', 'investigating', 'clear', 'keep'),
    ('gate_investigate', 'draining', 'drained', 'clear', 'keep'),
    ('gate_investigate', 'registered', 'registered', 'keep', 'keep'),
    ('gate_investigate', 'provisioned', 'provisioned', 'keep', 'keep'),
    ('gate_investigate', 'ready', 'ready', 'keep', 'keep'),
    ('gate_investigate', 'investigating', 'investigating', 'keep', 'keep'),
    ('gate_investigate', 'quarantined', 'quarantined', 'keep', 'keep'),
    ('gate_investigate', 'drained', 'drained', 'keep', 'keep'),
    ('gate_investigate', 'failed', 'failed', 'keep', 'keep'),
    ('gate_investigate', 'stopped', 'stopped', 'keep', 'keep'),
    ('gate_investigate', 'unreachable', 'unreachable', 'keep', 'keep'),
    ('gate_isolated', 'gating', 'quarantined', 'clear', 'set'),
    ('gate_isolated', 'draining', 'quarantined', 'clear', 'set'),
    ('diagnostics_requested', 'drained', 'drained', 'keep', 'keep'),
    ('diagnostics_requested', 'quarantined', 'quarantined', 'keep', 'keep'),
    ('diagnostics_started', 'drained', 'diagnosing', 'keep', 'keep'),
    ('diagnostics_started', 'diagnosing', 'diagnosing', 'keep', 'keep'),
    ('diagnostics_started', 'quarantined', 'quarantined', 'keep', 'keep'),
    ('diagnostics_finished', 'diagnosing', 'drained', 'keep', 'keep'),
    ('diagnostics_finished', 'registered', 'registered', 'keep', 'keep'),
    ('diagnostics_finished', 'provisioned', 'provisioned', 'keep', 'keep'),
    ('diagnostics_finished', 'ready', 'ready', 'keep', 'keep'),
    ('diagnostics_finished', 'investigating', 'investigating', 'keep', 'keep'),
    ('diagnostics_finished', 'quarantined', 'quarantined', 'keep', 'keep'),
    ('diagnostics_finished', 'drained', 'drained', 'keep', 'keep'),
    ('diagnostics_finished', 'failed', 'failed', 'keep', 'keep'),
    ('diagnostics_finished', 'stopped', 'stopped', 'keep', 'keep'),
    ('diagnostics_finished', 'unreachable', 'unreachable', 'keep', 'keep'),
    ('diagnostics_isolated', 'diagnosing', 'quarantined', 'clear', 'set'),
    ('diagnostics_isolated', 'quarantined', 'quarantined', 'clear', 'set'),
    ('drain', 'registered', 'draining', 'keep', 'keep'),
    ('drain', 'provisioned', 'draining', 'keep', 'keep'),
    ('drain', 'ready', 'draining', 'keep', 'keep'),
    ('drain', 'investigating', 'draining', 'keep', 'keep'),
    ('drain', 'failed', 'draining', 'keep', 'keep'),
    ('drain', 'provisioning', 'draining', 'keep', 'keep'),
    ('drain', 'gating', 'draining', 'keep', 'keep'),
    ('drain', 'draining', 'draining', 'keep', 'keep'),
    ('drain', 'drained', 'drained', 'keep', 'keep'),
    ('drain', 'diagnosing', 'diagnosing', 'keep', 'keep'),
    ('drained_when_idle', 'draining', 'drained', 'keep', 'keep'),
    ('resume', 'drained', 'ready', 'keep', 'keep'),
    ('resume', 'ready', 'ready', 'keep', 'keep'),
    ('stop_requested', 'registered', 'registered', 'keep', 'keep'),
    ('stop_requested', 'provisioning', 'provisioning', 'keep', 'keep'),
    ('stop_requested', 'provisioned', 'provisioned', 'keep', 'keep'),
    ('stop_requested', 'gating', 'gating', 'keep', 'keep'),
    ('stop_requested', 'ready', 'ready', 'keep', 'keep'),
    ('stop_requested', 'investigating', 'investigating', 'keep', 'keep'),
    ('stop_requested', 'quarantined', 'quarantined', 'keep', 'keep'),
    ('stop_requested', 'draining', 'draining', 'keep', 'keep'),
    ('stop_requested', 'drained', 'drained', 'keep', 'keep'),
    ('stop_requested', 'diagnosing', 'diagnosing', 'keep', 'keep'),
    ('stop_requested', 'failed', 'failed', 'keep', 'keep'),
    ('stop_requested', 'unreachable', 'unreachable', 'keep', 'keep'),
    ('stop_started', 'registered', 'stopping', 'keep', 'keep'),
    ('stop_started', 'provisioning', 'stopping', 'keep', 'keep'),
    ('stop_started', 'provisioned', 'stopping', 'keep', 'keep'),
    ('stop_started', 'gating', 'stopping', 'keep', 'keep'),
    ('stop_started', 'ready', 'stopping', 'keep', 'keep'),
    ('stop_started', 'investigating', 'stopping', 'keep', 'keep'),
    ('stop_started', 'quarantined', 'stopping', 'keep', 'keep'),
    ('stop_started', 'draining', 'stopping', 'keep', 'keep'),
    ('stop_started', 'drained', 'stopping', 'keep', 'keep'),
    ('stop_started', 'diagnosing', 'stopping', 'keep', 'keep'),
    ('stop_started', 'failed', 'stopping', 'keep', 'keep'),
    ('stop_started', 'unreachable', 'stopping', 'keep', 'keep'),
    ('stop_started', 'stopping', 'stopping', 'keep', 'keep'),
    ('stop_done', 'stopping', 'stopped', 'keep', 'keep'),
    ('stop_failed', 'stopping', 'registered', 'keep', 'keep'),
    ('stop_failed', 'stopping', 'provisioned', 'keep', 'keep'),
    ('stop_failed', 'stopping', 'ready', 'keep', 'keep'),
    ('stop_failed', 'stopping', 'investigating', 'keep', 'keep'),
    ('stop_failed', 'stopping', 'quarantined', 'keep', 'keep'),
    ('stop_failed', 'stopping', 'drained', 'keep', 'keep'),
    ('stop_failed', 'stopping', 'failed', 'keep', 'keep'),
    ('stop_failed', 'stopping', 'unreachable', 'keep', 'keep'),
    ('stop_failed', 'registered', 'registered', 'keep', 'keep'),
    ('stop_failed', 'provisioned', 'provisioned', 'keep', 'keep'),
    ('stop_failed', 'ready', 'ready', 'keep', 'keep'),
    ('stop_failed', 'investigating', 'investigating', 'keep', 'keep'),
    ('stop_failed', 'quarantined', 'quarantined', 'keep', 'keep'),
    ('stop_failed', 'drained', 'drained', 'keep', 'keep'),
    ('stop_failed', 'failed', 'failed', 'keep', 'keep'),
    ('stop_failed', 'stopped', 'stopped', 'keep', 'keep'),
    ('stop_failed', 'unreachable', 'unreachable', 'keep', 'keep'),
    ('key_mismatch', 'registered', 'quarantined', 'clear', 'set'),
    ('key_mismatch', 'provisioning', 'quarantined', 'clear', 'set'),
    ('key_mismatch', 'provisioned', 'quarantined', 'clear', 'set'),
    ('key_mismatch', 'gating', 'quarantined', 'clear', 'set'),
    ('key_mismatch', 'ready', 'quarantined', 'clear', 'set'),
    ('key_mismatch', 'investigating', 'quarantined', 'clear', 'set'),
    ('key_mismatch', 'quarantined', 'quarantined', 'clear', 'set'),
    ('key_mismatch', 'draining', 'quarantined', 'clear', 'set'),
    ('key_mismatch', 'drained', 'quarantined', 'clear', 'set'),
    ('key_mismatch', 'diagnosing', 'quarantined', 'clear', 'set'),
    ('key_mismatch', 'stopping', 'quarantined', 'clear', 'set'),
    ('key_mismatch', 'failed', 'quarantined', 'clear', 'set'),
    ('key_mismatch', 'unreachable', 'quarantined', 'clear', 'set'),
    ('release', 'quarantined', 'provisioned', 'keep', 'clear'),
    ('release', 'quarantined', 'registered', 'keep', 'clear'),
    ('release', 'stopped', 'stopped', 'keep', 'clear'),
    ('job_cancelled', 'provisioning', 'failed', 'clear', 'keep'),
    ('job_cancelled', 'gating', 'investigating', 'clear', 'keep'),
    ('job_cancelled', 'diagnosing', 'drained', 'keep', 'keep'),
    ('job_cancelled', 'draining', 'drained', 'keep', 'keep'),
    ('job_cancelled', 'stopping', 'registered', 'keep', 'keep'),
    ('job_cancelled', 'stopping', 'provisioned', 'keep', 'keep'),
    ('job_cancelled', 'stopping', 'ready', 'keep', 'keep'),
    ('job_cancelled', 'stopping', 'investigating', 'keep', 'keep'),
    ('job_cancelled', 'stopping', 'quarantined', 'keep', 'keep'),
    ('job_cancelled', 'stopping', 'drained', 'keep', 'keep'),
    ('job_cancelled', 'stopping', 'failed', 'keep', 'keep'),
    ('job_cancelled', 'stopping', 'unreachable', 'keep', 'keep'),
    ('job_cancelled', 'registered', 'registered', 'keep', 'keep'),
    ('job_cancelled', 'provisioned', 'provisioned', 'keep', 'keep'),
    ('job_cancelled', 'ready', 'ready', 'keep', 'keep'),
    ('job_cancelled', 'investigating', 'investigating', 'keep', 'keep'),
    ('job_cancelled', 'quarantined', 'quarantined', 'keep', 'keep'),
    ('job_cancelled', 'drained', 'drained', 'keep', 'keep'),
    ('job_cancelled', 'failed', 'failed', 'keep', 'keep'),
    ('job_cancelled', 'stopped', 'stopped', 'keep', 'keep'),
    ('job_cancelled', 'unreachable', 'unreachable', 'keep', 'keep'),
    ('job_expired', 'provisioning', 'failed', 'clear', 'keep'),
    ('job_expired', 'gating', 'investigating', 'clear', 'keep'),
    ('job_expired', 'diagnosing', 'drained', 'keep', 'keep'),
    ('job_expired', 'draining', 'drained', 'keep', 'keep'),
    ('job_expired', 'stopping', 'failed', 'keep', 'keep'),
    ('job_expired', 'stopping', 'quarantined', 'keep', 'keep'),
    ('job_expired', 'registered', 'registered', 'keep', 'keep'),
    ('job_expired', 'provisioned', 'provisioned', 'keep', 'keep'),
    ('job_expired', 'ready', 'ready', 'keep', 'keep'),
    ('job_expired', 'investigating', 'investigating', 'keep', 'keep'),
    ('job_expired', 'quarantined', 'quarantined', 'keep', 'keep'),
    ('job_expired', 'drained', 'drained', 'keep', 'keep'),
    ('job_expired', 'failed', 'failed', 'keep', 'keep'),
    ('job_expired', 'stopped', 'stopped', 'keep', 'keep'),
    ('job_expired', 'unreachable', 'unreachable', 'keep', 'keep'),
    ('deleted', 'registered', 'registered', 'keep', 'keep'),
    ('deleted', 'provisioned', 'provisioned', 'keep', 'keep'),
    ('deleted', 'ready', 'ready', 'keep', 'keep'),
    ('deleted', 'investigating', 'investigating', 'keep', 'keep'),
    ('deleted', 'quarantined', 'quarantined', 'keep', 'keep'),
    ('deleted', 'drained', 'drained', 'keep', 'keep'),
    ('deleted', 'failed', 'failed', 'keep', 'keep'),
    ('deleted', 'stopped', 'stopped', 'keep', 'keep'),
    ('deleted', 'unreachable', 'unreachable', 'keep', 'keep'),
    ('monitor_unreachable', 'ready', 'unreachable', 'keep', 'keep'),
    ('monitor_unreachable', 'draining', 'unreachable', 'keep', 'keep'),
    ('monitor_unreachable', 'drained', 'unreachable', 'keep', 'keep'),
    ('monitor_unreachable', 'unreachable', 'unreachable', 'keep', 'keep'),
    ('monitor_unreachable', 'quarantined', 'quarantined', 'keep', 'keep'),
    ('monitor_reachable', 'unreachable', 'ready', 'keep', 'keep'),
    ('monitor_reachable', 'unreachable', 'draining', 'keep', 'keep'),
    ('monitor_reachable', 'unreachable', 'drained', 'keep', 'keep'),
    ('monitor_isolated', 'ready', 'quarantined', 'clear', 'set'),
    ('monitor_isolated', 'draining', 'quarantined', 'clear', 'set'),
    ('monitor_isolated', 'drained', 'quarantined', 'clear', 'set'),
    ('monitor_isolated', 'unreachable', 'quarantined', 'clear', 'set'),
    ('monitor_isolated', 'quarantined', 'quarantined', 'clear', 'set'),
    ('recovery_started', 'quarantined', 'draining', 'keep', 'clear'),
    ('recovery_failed', 'draining', 'quarantined', 'clear', 'set'),
    ('recovery_failed', 'drained', 'quarantined', 'clear', 'set'),
    ('recovery_failed', 'investigating', 'quarantined', 'clear', 'set'),
    ('recovery_failed', 'unreachable', 'quarantined', 'clear', 'set');
-- END generated by planner/host_state.c
