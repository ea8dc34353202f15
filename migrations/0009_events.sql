-- 0009_events: the live event stream (GET /v1/events). Triggers on the tables that
-- change write events in the same transaction as the change, so every replica and the
-- worker process produce them the same way; a statement trigger on events NOTIFYs the
-- replicas' event hubs. Single-use tickets let browsers (EventSource) open a stream.

CREATE TABLE events (
    id      bigserial PRIMARY KEY,
    at      timestamptz NOT NULL DEFAULT now(),
    type    text NOT NULL CHECK (type ~ '^[a-z][a-z_]*(\.[a-z][a-z_]*)+$'),
    pool_id uuid,
    host_id uuid,
    data    jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(data) = 'object')
);
-- Resume and live reads go by id (the primary key); filtered backlogs by pool or host;
-- retention by time.
CREATE INDEX events_pool ON events (pool_id, id) WHERE pool_id IS NOT NULL;
CREATE INDEX events_host ON events (host_id, id) WHERE host_id IS NOT NULL;
CREATE INDEX events_at ON events (at);

COMMENT ON TABLE events IS 'Changes streamed to clients by GET /v1/events (Server-Sent Events); kept for GPUFLEET_EVENTS_RETENTION seconds so a client can resume with Last-Event-ID.';
COMMENT ON COLUMN events.id IS 'Order of events; the SSE id a client resumes from.';
COMMENT ON COLUMN events.at IS 'When the change happened (its transaction''s time).';
COMMENT ON COLUMN events.type IS 'Event type, e.g. host.state, job.step, gate.verdict.';
COMMENT ON COLUMN events.pool_id IS 'The pool concerned, when there is one (stream filter pool_id).';
COMMENT ON COLUMN events.host_id IS 'The host concerned, when there is one (stream filter host_id).';
COMMENT ON COLUMN events.data IS 'Type-specific members; the stream adds id, type, at, pool_id and host_id.';

CREATE FUNCTION events_emit(p_type text, p_pool uuid, p_host uuid, p_data jsonb)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO events (type, pool_id, host_id, data) VALUES (p_type, p_pool, p_host, p_data)
$$;
COMMENT ON FUNCTION events_emit(text, uuid, uuid, jsonb) IS 'Appends one event (used by the triggers below).';

-- One notification per statement that added events, not one per row. The payload is the
-- highest id added; hubs read everything after their own position anyway.
-- (A statement trigger also runs for an INSERT … SELECT that added no row: no NOTIFY then.)
CREATE FUNCTION events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    top bigint;
BEGIN
    SELECT max(id) INTO top FROM new_events;
    IF top IS NOT NULL THEN
        PERFORM pg_notify('gpufleet_events', top::text);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER events_notify AFTER INSERT ON events REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION events_notify();
COMMENT ON FUNCTION events_notify() IS 'NOTIFY gpufleet_events once per statement that added events.';

-- Hosts: registration, state changes, other changes, deletion.
CREATE FUNCTION events_hosts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed text[] := '{}';
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM events_emit('host.created', NEW.pool_id, NEW.id,
                            jsonb_build_object('state', NEW.state, 'name', NEW.name));
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN
        PERFORM events_emit('host.deleted', OLD.pool_id, OLD.id,
                            jsonb_build_object('name', OLD.name));
        RETURN NULL;
    END IF;
    IF NEW.state IS DISTINCT FROM OLD.state THEN
        PERFORM events_emit('host.state', NEW.pool_id, NEW.id,
                            jsonb_build_object('from', OLD.state, 'to', NEW.state));
    END IF;
    -- Not listed: state (above), and bookkeeping (updated_at, last_seen, last_job_id).
    IF NEW.name IS DISTINCT FROM OLD.name THEN changed := changed || 'name'::text; END IF;
    IF NEW.address IS DISTINCT FROM OLD.address THEN changed := changed || 'address'::text; END IF;
    IF NEW.port IS DISTINCT FROM OLD.port THEN changed := changed || 'port'::text; END IF;
    IF NEW.ssh_user IS DISTINCT FROM OLD.ssh_user THEN changed := changed || 'user'::text; END IF;
    IF NEW.credential_id IS DISTINCT FROM OLD.credential_id THEN
        changed := changed || 'credential_id'::text;
    END IF;
    IF NEW.pool_id IS DISTINCT FROM OLD.pool_id THEN changed := changed || 'pool_id'::text; END IF;
    IF NEW.host_key_sha256 IS DISTINCT FROM OLD.host_key_sha256 THEN
        changed := changed || 'host_key_sha256'::text;
    END IF;
    IF NEW.labels IS DISTINCT FROM OLD.labels THEN changed := changed || 'labels'::text; END IF;
    IF NEW.facts IS DISTINCT FROM OLD.facts THEN changed := changed || 'facts'::text; END IF;
    IF NEW.current_stack_id IS DISTINCT FROM OLD.current_stack_id THEN
        changed := changed || 'current_stack_id'::text;
    END IF;
    IF NEW.desired_stack_id IS DISTINCT FROM OLD.desired_stack_id THEN
        changed := changed || 'desired_stack_id'::text;
    END IF;
    IF NEW.accepted_gate_run_id IS DISTINCT FROM OLD.accepted_gate_run_id THEN
        changed := changed || 'accepted_gate_run_id'::text;
    END IF;
    IF cardinality(changed) > 0 THEN
        PERFORM events_emit('host.updated', NEW.pool_id, NEW.id,
                            jsonb_build_object('changed', to_jsonb(changed)));
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER events_hosts AFTER INSERT OR UPDATE OR DELETE ON hosts
    FOR EACH ROW EXECUTE FUNCTION events_hosts();
COMMENT ON FUNCTION events_hosts() IS 'Events host.created, host.state, host.updated and host.deleted.';

-- Jobs: creation and every state change.
CREATE FUNCTION events_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.state IS NOT DISTINCT FROM OLD.state THEN
        RETURN NULL;
    END IF;
    PERFORM events_emit('job.state', (SELECT h.pool_id FROM hosts h WHERE h.id = NEW.host_id),
                        NEW.host_id,
                        jsonb_build_object('job_id', NEW.id, 'kind', NEW.kind,
                                           'from', CASE WHEN TG_OP = 'UPDATE' THEN OLD.state END,
                                           'to', NEW.state, 'attempt', NEW.attempt,
                                           'error_class', NEW.error_class));
    RETURN NULL;
END $$;
CREATE TRIGGER events_jobs AFTER INSERT OR UPDATE OF state ON jobs
    FOR EACH ROW EXECUTE FUNCTION events_jobs();
COMMENT ON FUNCTION events_jobs() IS 'Event job.state on creation (from null) and on every state change.';

-- Job steps: one event per recorded step result (check or apply phase).
CREATE FUNCTION events_job_steps() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM events_emit('job.step', h.pool_id, j.host_id,
                        jsonb_build_object('job_id', j.id, 'kind', j.kind, 'step', NEW.name,
                                           'status', NEW.outcome, 'phase', NEW.phase,
                                           'index', NEW.idx, 'attempt', NEW.attempt))
    FROM jobs j LEFT JOIN hosts h ON h.id = j.host_id WHERE j.id = NEW.job_id;
    RETURN NULL;
END $$;
CREATE TRIGGER events_job_steps AFTER INSERT ON job_steps
    FOR EACH ROW EXECUTE FUNCTION events_job_steps();
COMMENT ON FUNCTION events_job_steps() IS 'Event job.step for every recorded step result.';

-- Gate and diagnostics runs: their verdict. A check fails when its status is fail or
-- timeout (as the gate verdict counts it).
CREATE FUNCTION events_gate_runs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    failing jsonb;
    pool uuid;
BEGIN
    SELECT coalesce(jsonb_agg(c->'name' ORDER BY ord), '[]'::jsonb) INTO failing
        FROM jsonb_array_elements(NEW.checks) WITH ORDINALITY AS x(c, ord)
        WHERE c->>'status' IN ('fail', 'timeout');
    SELECT h.pool_id INTO pool FROM hosts h WHERE h.id = NEW.host_id;
    IF NEW.kind = 'gate' THEN
        PERFORM events_emit('gate.verdict', coalesce(pool, NEW.pool_id), NEW.host_id,
                            jsonb_build_object('gate_run_id', NEW.id, 'job_id', NEW.job_id,
                                               'verdict', NEW.verdict,
                                               'failing_checks', failing));
    ELSE
        PERFORM events_emit('diagnostics.verdict', coalesce(pool, NEW.pool_id), NEW.host_id,
                            jsonb_build_object('run_id', NEW.id, 'job_id', NEW.job_id,
                                               'level', NEW.diag_level, 'verdict', NEW.verdict,
                                               'failing_checks', failing));
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER events_gate_runs AFTER INSERT ON gate_runs
    FOR EACH ROW EXECUTE FUNCTION events_gate_runs();
COMMENT ON FUNCTION events_gate_runs() IS 'Events gate.verdict and diagnostics.verdict.';

-- Work reports: counted per pool, once per INSERT statement (a batch is one statement),
-- into an append-only table: concurrent batches never wait on one another for it. The
-- event hubs turn the counts into at most one work_reports.ingested event per pool per
-- GPUFLEET_EVENTS_INGEST_THROTTLE_SECONDS (event_ingest_throttle, written by hubs only).
CREATE TABLE event_ingest_pending (
    pool_id        uuid NOT NULL,
    records        bigint NOT NULL CHECK (records > 0),
    window_end_max timestamptz NOT NULL
);
COMMENT ON TABLE event_ingest_pending IS 'Work reports stored per pool and INSERT statement, not yet announced by a work_reports.ingested event.';
COMMENT ON COLUMN event_ingest_pending.pool_id IS 'The pool of the reporting hosts.';
COMMENT ON COLUMN event_ingest_pending.records IS 'Reports the statement stored for hosts of the pool.';
COMMENT ON COLUMN event_ingest_pending.window_end_max IS 'Latest window_end among them.';

CREATE TABLE event_ingest_throttle (
    pool_id         uuid PRIMARY KEY REFERENCES pools (id) ON DELETE CASCADE,
    last_emitted_at timestamptz
);
COMMENT ON TABLE event_ingest_throttle IS 'When each pool last had a work_reports.ingested event.';
COMMENT ON COLUMN event_ingest_throttle.pool_id IS 'The pool.';
COMMENT ON COLUMN event_ingest_throttle.last_emitted_at IS 'When the last event for this pool was written.';

CREATE FUNCTION events_work_reports() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO event_ingest_pending (pool_id, records, window_end_max)
    SELECT h.pool_id, count(*), max(n.window_end)
        FROM new_reports n JOIN hosts h ON h.id = n.host_id
        GROUP BY h.pool_id;
    IF FOUND THEN
        PERFORM pg_notify('gpufleet_events', 'ingest');
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER events_work_reports AFTER INSERT ON work_reports REFERENCING NEW TABLE AS new_reports
    FOR EACH STATEMENT EXECUTE FUNCTION events_work_reports();
COMMENT ON FUNCTION events_work_reports() IS 'Counts stored work reports per pool for the work_reports.ingested event (once per statement).';

-- Tickets: what an EventSource, which cannot send headers, presents as ?ticket=.
CREATE TABLE event_tickets (
    hash       text PRIMARY KEY CHECK (hash ~ '^[0-9a-f]{64}$'),
    sub        text NOT NULL CHECK (length(sub) BETWEEN 1 AND 128),
    role       text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX event_tickets_expires ON event_tickets (expires_at);
COMMENT ON TABLE event_tickets IS 'Single-use, short-lived tickets for GET /v1/events?ticket=, minted by POST /v1/event-tickets. Only the hash is stored, so any replica can redeem a ticket and none can reveal one.';
COMMENT ON COLUMN event_tickets.hash IS 'Lowercase hex SHA-256 of the ticket text.';
COMMENT ON COLUMN event_tickets.sub IS 'The principal (JWT sub) the ticket was minted for.';
COMMENT ON COLUMN event_tickets.role IS 'That principal''s role; the stream checks it again.';
COMMENT ON COLUMN event_tickets.created_at IS 'When it was minted.';
COMMENT ON COLUMN event_tickets.expires_at IS 'Not redeemable from this time on.';
COMMENT ON COLUMN event_tickets.used_at IS 'When it was redeemed; a ticket is redeemed at most once.';
