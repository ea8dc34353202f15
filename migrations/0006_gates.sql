-- 0006_gates: acceptance gate runs and active diagnostics, and what makes a host ready.

CREATE TABLE gate_runs (
    seq           bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    kind          text NOT NULL CHECK (kind IN ('gate', 'diagnostics')),
    host_id       uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
    job_id        uuid REFERENCES jobs (id) ON DELETE SET NULL,
    stack_id      uuid REFERENCES stacks (id) ON DELETE RESTRICT,
    pool_id       uuid,
    gate_version  integer,
    diag_level    integer CHECK (diag_level BETWEEN 1 AND 3),
    verdict       text NOT NULL CHECK (verdict IN ('accept', 'isolate', 'investigate')),
    reason        text NOT NULL,
    checks        jsonb NOT NULL CHECK (jsonb_typeof(checks) = 'array'),
    connect_ms    double precision,
    inventory     text,
    started_at    timestamptz NOT NULL,
    finished_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX gate_runs_host_seq ON gate_runs (host_id, seq);

COMMENT ON TABLE gate_runs IS 'Every acceptance gate and diagnostics run: per check its status, evidence (at most 8 KiB), parsed values and duration, and one verdict.';
COMMENT ON COLUMN gate_runs.seq IS 'Order of runs; the keyset for pagination.';
COMMENT ON COLUMN gate_runs.id IS 'Public identifier.';
COMMENT ON COLUMN gate_runs.kind IS 'gate (the acceptance gate) or diagnostics (dcgmi diag on a drained host).';
COMMENT ON COLUMN gate_runs.host_id IS 'The host.';
COMMENT ON COLUMN gate_runs.job_id IS 'The job that ran it.';
COMMENT ON COLUMN gate_runs.stack_id IS 'The host''s current stack when it ran; a gate is valid only for this stack.';
COMMENT ON COLUMN gate_runs.pool_id IS 'The pool whose gate definition was used.';
COMMENT ON COLUMN gate_runs.gate_version IS 'The pool''s gate definition version used.';
COMMENT ON COLUMN gate_runs.diag_level IS 'dcgmi diag -r level (diagnostics runs).';
COMMENT ON COLUMN gate_runs.verdict IS 'accept (the host may serve), isolate (hardware evidence), investigate (anything else).';
COMMENT ON COLUMN gate_runs.reason IS 'The verdict in words: which checks decided it.';
COMMENT ON COLUMN gate_runs.checks IS 'Per check: name, status (pass, fail, warn, skip, timeout), hardware_evidence, message, evidence, values, duration_ms and its phases.';
COMMENT ON COLUMN gate_runs.connect_ms IS 'SSH connect, handshake and authentication time.';
COMMENT ON COLUMN gate_runs.inventory IS 'Fingerprint of the GPU inventory and topology the gate saw; a later change invalidates the acceptance.';
COMMENT ON COLUMN gate_runs.started_at IS 'When the run began.';
COMMENT ON COLUMN gate_runs.finished_at IS 'When the verdict was recorded.';

ALTER TABLE hosts ADD COLUMN accepted_gate_run_id uuid REFERENCES gate_runs (id) ON DELETE SET NULL;
COMMENT ON COLUMN hosts.accepted_gate_run_id IS 'The accepted gate run that lets this host serve; cleared when the stack or the GPU inventory changes.';

ALTER TABLE jobs ADD COLUMN params jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(params) = 'object');
COMMENT ON COLUMN jobs.params IS 'Job parameters beyond the stack (e.g. {"level": 2} for diagnostics).';
