-- 0005_hosts_jobs: hosts reached over SSH, their state history, and the durable job queue.

CREATE TABLE hosts (
    seq              bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name             text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
    address          inet NOT NULL,
    port             integer NOT NULL DEFAULT 22 CHECK (port BETWEEN 1 AND 65535),
    ssh_user         text NOT NULL CHECK (ssh_user ~ '^[a-z_][a-z0-9_-]{0,31}$'),
    credential_id    uuid NOT NULL REFERENCES credentials (id) ON DELETE RESTRICT,
    pool_id          uuid NOT NULL REFERENCES pools (id) ON DELETE RESTRICT,
    host_key_sha256  text CHECK (host_key_sha256 ~ '^SHA256:[A-Za-z0-9+/]{43}$'),
    labels           jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(labels) = 'object'),
    state            text NOT NULL DEFAULT 'registered' CHECK (state IN (
                         'registered', 'provisioning', 'provisioned', 'gating', 'ready',
                         'investigating', 'quarantined', 'draining', 'drained', 'diagnosing',
                         'stopping', 'stopped', 'failed')),
    facts            jsonb,
    current_stack_id uuid REFERENCES stacks (id) ON DELETE RESTRICT,
    desired_stack_id uuid REFERENCES stacks (id) ON DELETE RESTRICT,
    last_job_id      uuid,
    last_seen        timestamptz,
    created_by       text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX hosts_state_seq ON hosts (state, seq);
CREATE INDEX hosts_pool_seq ON hosts (pool_id, seq);
CREATE INDEX hosts_labels ON hosts USING gin (labels jsonb_path_ops);

COMMENT ON TABLE hosts IS 'GPU servers registered for provisioning over SSH (PRODUCT.md §4).';
COMMENT ON COLUMN hosts.seq IS 'Registration order; the keyset for pagination.';
COMMENT ON COLUMN hosts.id IS 'Public identifier.';
COMMENT ON COLUMN hosts.name IS 'Unique host name.';
COMMENT ON COLUMN hosts.address IS 'Literal IP address reached over SSH; checked against GPUFLEET_SSH_ALLOW_CIDRS.';
COMMENT ON COLUMN hosts.port IS 'SSH port.';
COMMENT ON COLUMN hosts.ssh_user IS 'Login user.';
COMMENT ON COLUMN hosts.credential_id IS 'The SSH private key (encrypted at rest) used to log in.';
COMMENT ON COLUMN hosts.pool_id IS 'The pool the host belongs to (expected GPUs, prices, paths, gate).';
COMMENT ON COLUMN hosts.host_key_sha256 IS 'Pinned host key fingerprint (SHA256:...), given at registration or recorded on first contact; a mismatch quarantines the host.';
COMMENT ON COLUMN hosts.labels IS 'Free-form key/value labels for filtering.';
COMMENT ON COLUMN hosts.state IS 'Lifecycle state; every change is recorded in host_state_history.';
COMMENT ON COLUMN hosts.facts IS 'Facts gathered by the last provisioning: OS, kernel, CPU, memory, NUMA, filesystems, GPUs, driver.';
COMMENT ON COLUMN hosts.current_stack_id IS 'The stack last applied successfully.';
COMMENT ON COLUMN hosts.desired_stack_id IS 'The stack the last provisioning request asked for.';
COMMENT ON COLUMN hosts.last_job_id IS 'The most recent job for this host.';
COMMENT ON COLUMN hosts.last_seen IS 'When gpufleet last reached the host over SSH.';
COMMENT ON COLUMN hosts.created_by IS 'JWT sub of the operator who registered it.';
COMMENT ON COLUMN hosts.created_at IS 'Registration time.';
COMMENT ON COLUMN hosts.updated_at IS 'Last change of any column.';

CREATE TABLE host_state_history (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    host_id     uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
    from_state  text,
    to_state    text NOT NULL,
    reason      text NOT NULL,
    job_id      uuid,
    actor       text NOT NULL,
    at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX host_state_history_host ON host_state_history (host_id, id);
COMMENT ON TABLE host_state_history IS 'Every host state change, with who or what caused it (held time and audits derive from it).';
COMMENT ON COLUMN host_state_history.id IS 'Order of changes.';
COMMENT ON COLUMN host_state_history.host_id IS 'The host.';
COMMENT ON COLUMN host_state_history.from_state IS 'State before the change (NULL at registration).';
COMMENT ON COLUMN host_state_history.to_state IS 'State after the change.';
COMMENT ON COLUMN host_state_history.reason IS 'Why, in words (e.g. provisioning succeeded, host key mismatch).';
COMMENT ON COLUMN host_state_history.job_id IS 'The job that caused it, if any.';
COMMENT ON COLUMN host_state_history.actor IS 'JWT sub of a person, or worker:<id> for a job.';
COMMENT ON COLUMN host_state_history.at IS 'When.';

CREATE TABLE jobs (
    seq              bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    kind             text NOT NULL CHECK (kind IN ('provision', 'gate', 'diagnostics', 'stop')),
    host_id          uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
    stack_id         uuid REFERENCES stacks (id) ON DELETE RESTRICT,
    state            text NOT NULL DEFAULT 'queued'
                     CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    attempt          integer NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts     integer NOT NULL DEFAULT 3 CHECK (max_attempts BETWEEN 1 AND 20),
    run_after        timestamptz NOT NULL DEFAULT now(),
    lease_owner      text,
    lease_expires_at timestamptz,
    heartbeat_at     timestamptz,
    progress_step    integer NOT NULL DEFAULT 0,
    progress_total   integer NOT NULL DEFAULT 0,
    cancel_requested boolean NOT NULL DEFAULT false,
    error_class      text,
    error            text,
    created_by       text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz
);
-- One active job per host: a second request gets 409 host_busy.
CREATE UNIQUE INDEX jobs_one_active_per_host ON jobs (host_id) WHERE state IN ('queued', 'running');
CREATE INDEX jobs_claimable ON jobs (run_after, seq) WHERE state = 'queued';
CREATE INDEX jobs_leases ON jobs (lease_expires_at) WHERE state = 'running';
CREATE INDEX jobs_host_seq ON jobs (host_id, seq);

COMMENT ON TABLE jobs IS 'Durable job queue: workers claim with FOR UPDATE SKIP LOCKED, hold a lease renewed by heartbeats, and fence every completing write with the attempt number.';
COMMENT ON COLUMN jobs.seq IS 'Creation order; the keyset for pagination and the claim order.';
COMMENT ON COLUMN jobs.id IS 'Public identifier.';
COMMENT ON COLUMN jobs.kind IS 'What the job does.';
COMMENT ON COLUMN jobs.host_id IS 'The host it acts on.';
COMMENT ON COLUMN jobs.stack_id IS 'The stack to apply (provision jobs).';
COMMENT ON COLUMN jobs.state IS 'queued, running, succeeded, failed or cancelled.';
COMMENT ON COLUMN jobs.attempt IS 'Incremented at each claim; the fencing token every completing write must present.';
COMMENT ON COLUMN jobs.max_attempts IS 'Retry budget for transient failures and lost leases.';
COMMENT ON COLUMN jobs.run_after IS 'Not claimable before this time (retry backoff).';
COMMENT ON COLUMN jobs.lease_owner IS 'Worker holding the lease.';
COMMENT ON COLUMN jobs.lease_expires_at IS 'When the lease lapses unless renewed; another worker may then take the job over.';
COMMENT ON COLUMN jobs.heartbeat_at IS 'Last lease renewal.';
COMMENT ON COLUMN jobs.progress_step IS 'Steps completed (k of n).';
COMMENT ON COLUMN jobs.progress_total IS 'Steps in the job (n).';
COMMENT ON COLUMN jobs.cancel_requested IS 'Set by POST /v1/jobs/{id}/cancel on a running job; the worker stops at the next step.';
COMMENT ON COLUMN jobs.error_class IS 'Why it failed: transient (refused, timed_out, reset, disconnected, lease_lost) or permanent (auth_failed, host_key_mismatch, address_not_allowed, step_failed).';
COMMENT ON COLUMN jobs.error IS 'The failure in words.';
COMMENT ON COLUMN jobs.created_by IS 'JWT sub of the requester.';
COMMENT ON COLUMN jobs.created_at IS 'When requested.';
COMMENT ON COLUMN jobs.started_at IS 'First claim.';
COMMENT ON COLUMN jobs.finished_at IS 'When it reached a final state.';

CREATE TABLE job_steps (
    job_id       uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt      integer NOT NULL,
    idx          integer NOT NULL,
    phase        text NOT NULL CHECK (phase IN ('check', 'apply')),
    name         text NOT NULL,
    command      text NOT NULL,
    exit_status  integer,
    outcome      text NOT NULL CHECK (outcome IN ('ok', 'needs_apply', 'changed', 'failed', 'error')),
    stdout_tail  text NOT NULL DEFAULT '',
    stderr_tail  text NOT NULL DEFAULT '',
    message      text,
    duration_ms  double precision NOT NULL,
    finished_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, attempt, idx, phase)
);
COMMENT ON TABLE job_steps IS 'Every command a job ran: one row per step phase per attempt (the key forbids recording a step twice within an attempt).';
COMMENT ON COLUMN job_steps.job_id IS 'The job.';
COMMENT ON COLUMN job_steps.attempt IS 'The attempt (fencing token) that ran it.';
COMMENT ON COLUMN job_steps.idx IS 'Step number, from 1.';
COMMENT ON COLUMN job_steps.phase IS 'check (is it already so?) or apply (make it so).';
COMMENT ON COLUMN job_steps.name IS 'Step name: facts, driver, container_runtime, image, paths, config.';
COMMENT ON COLUMN job_steps.command IS 'The exact remote command, built from a fixed template with quoted values.';
COMMENT ON COLUMN job_steps.exit_status IS 'Remote exit status (NULL when the command did not finish).';
COMMENT ON COLUMN job_steps.outcome IS 'ok (already in place), needs_apply (the check found drift; the apply follows), changed (applied), failed (the check or apply failed), error (the command could not run).';
COMMENT ON COLUMN job_steps.stdout_tail IS 'Last 8 KiB of stdout.';
COMMENT ON COLUMN job_steps.stderr_tail IS 'Last 8 KiB of stderr.';
COMMENT ON COLUMN job_steps.message IS 'What the step concluded, in words.';
COMMENT ON COLUMN job_steps.duration_ms IS 'Wall time of the command.';
COMMENT ON COLUMN job_steps.finished_at IS 'When it finished.';

-- Workers LISTEN on gpufleet_jobs; a new or requeued job wakes them.
CREATE FUNCTION jobs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state = 'queued' THEN
        PERFORM pg_notify('gpufleet_jobs', NEW.kind);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER jobs_notify AFTER INSERT OR UPDATE OF state ON jobs
    FOR EACH ROW EXECUTE FUNCTION jobs_notify();
COMMENT ON FUNCTION jobs_notify() IS 'NOTIFY gpufleet_jobs when a job becomes claimable.';

-- Workers act on their own behalf: their audit events carry the role 'system'.
ALTER TABLE audit_events DROP CONSTRAINT audit_events_role_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_role_check
    CHECK (role IN ('viewer', 'operator', 'admin', 'reporter', 'system'));
