-- 0017_health_events: the event stream (GET /v1/events) and webhooks learn the health
-- monitor (issue 13, item 6):
--   * gpu.event: a row of gpu_events was opened (the first occurrence, or the first after
--     the previous one closed). One event per row, however often the row is counted again.
--   * host.health: a host's health summary changed (host_monitor.health), with the reason.
-- Both are written by triggers, in the transaction that stored the sample or made the
-- change: an event never claims what was not stored, and a rolled-back sample emits
-- nothing.
--
-- The health summary of a host, strongest first:
--   unreachable  the host's state is unreachable, or it missed monitor.unreachable_after
--                samples in a row (a quarantined host is never moved to unreachable);
--   unknown      no sample was stored yet;
--   critical     an open event with policy isolate, or a GPU missing from the inventory;
--   degraded     an open event seen in the last hour (policy record), or a missed sample;
--   ok           none of these.
-- It is evaluated once per transaction that touched what it depends on (deferred
-- triggers at commit, so that it sees the whole sample: its GPUs, its events and the
-- state change they caused), and stored in host_monitor only when it changed.

ALTER TABLE host_monitor
    ADD COLUMN miss_reason text CHECK (length(miss_reason) <= 256),
    ADD COLUMN health text NOT NULL DEFAULT 'unknown'
        CHECK (health IN ('ok', 'degraded', 'critical', 'unreachable', 'unknown')),
    ADD COLUMN health_reason text CHECK (length(health_reason) <= 1024),
    ADD COLUMN health_changed_at timestamptz;
COMMENT ON COLUMN host_monitor.miss_reason IS 'Why the last sample was missed (the monitor''s words, at most 256 characters); meaningful while missed > 0.';
COMMENT ON COLUMN host_monitor.health IS 'The host''s health summary as last evaluated (monitor_health_refresh): ok, degraded, critical, unreachable or unknown. A change emits host.health.';
COMMENT ON COLUMN host_monitor.health_reason IS 'Why health has its value, in words (at most 1024 characters).';
COMMENT ON COLUMN host_monitor.health_changed_at IS 'When health last changed; NULL before the first change.';
COMMENT ON COLUMN host_monitor.state IS 'The monitor''s view of the host as the API shows it (HostHealth.monitor.state): equal to health once a transaction commits (monitor_store writes ok, monitor_health_refresh sets it at commit).';

UPDATE host_monitor SET health = CASE WHEN last_sample_at IS NULL THEN 'unknown' ELSE 'ok' END,
                        state = CASE WHEN last_sample_at IS NULL THEN 'unknown' ELSE 'ok' END;

-- A gpu_events row in words: "Xid 79 on GPU 3 (GPU-…): GPU has fallen off the bus".
CREATE FUNCTION monitor_event_words(p_kind text, p_code integer, p_gpu text, p_pci text,
                                    p_message text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT left(concat_ws(': ',
        concat_ws(' on ',
            CASE p_kind WHEN 'xid' THEN 'Xid ' || p_code WHEN 'sxid' THEN 'SXid ' || p_code
                        ELSE replace(p_kind, '_', ' ') || coalesce(' ' || p_code, '') END,
            coalesce(p_gpu, 'PCI ' || p_pci)),
        nullif(p_message, '')), 512)
$$;
COMMENT ON FUNCTION monitor_event_words(text, integer, text, text, text) IS 'A health event in words, for host.health reasons (at most 512 characters).';

-- The health summary of a host now: (health, reason), or no row when the host or its
-- monitor row is gone.
CREATE FUNCTION monitor_health_of(p_host uuid, OUT health text, OUT reason text)
RETURNS SETOF record LANGUAGE plpgsql STABLE AS $$
DECLARE
    h record;
    m record;
    ev record;
    v_after integer;
    n_iso integer;
    n_missing integer;
    n_recent integer;
BEGIN
    SELECT x.state, x.pool_id, p.spec INTO h FROM hosts x JOIN pools p ON p.id = x.pool_id
     WHERE x.id = p_host;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT last_sample_at, missed, miss_reason INTO m FROM host_monitor WHERE host_id = p_host;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    v_after := coalesce((h.spec #>> '{monitor,unreachable_after}')::integer, 3);
    IF h.state = 'unreachable' OR m.missed >= v_after THEN
        health := 'unreachable';
        reason := format('%s sample%s missed in a row%s', m.missed,
                         CASE WHEN m.missed = 1 THEN '' ELSE 's' END,
                         coalesce(': ' || nullif(m.miss_reason, ''), ''));
        IF m.missed = 0 THEN
            reason := 'the host is unreachable';
        END IF;
        RETURN NEXT;
        RETURN;
    END IF;
    IF m.last_sample_at IS NULL THEN
        health := 'unknown';
        reason := CASE WHEN m.missed > 0
                       THEN format('no sample stored yet; %s missed%s', m.missed,
                                   coalesce(': ' || nullif(m.miss_reason, ''), ''))
                       ELSE 'no sample stored yet' END;
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT count(*) INTO n_iso FROM gpu_events
     WHERE host_id = p_host AND closed_at IS NULL AND policy = 'isolate';
    SELECT count(*) INTO n_missing FROM gpus WHERE host_id = p_host AND missing_since IS NOT NULL;
    IF n_iso > 0 THEN
        SELECT kind, code, gpu_uuid, pci_bus_id, message INTO ev FROM gpu_events
         WHERE host_id = p_host AND closed_at IS NULL AND policy = 'isolate'
         ORDER BY last_seen DESC, id DESC LIMIT 1;
        health := 'critical';
        reason := concat_ws('; ',
            format('%s open isolating event%s, the latest %s', n_iso,
                   CASE WHEN n_iso = 1 THEN '' ELSE 's' END,
                   monitor_event_words(ev.kind, ev.code, ev.gpu_uuid, ev.pci_bus_id, ev.message)),
            CASE WHEN n_missing > 0 THEN format('%s GPU%s missing from the inventory', n_missing,
                                                CASE WHEN n_missing = 1 THEN '' ELSE 's' END) END);
        RETURN NEXT;
        RETURN;
    END IF;
    IF n_missing > 0 THEN
        health := 'critical';
        reason := format('%s GPU%s missing from the inventory', n_missing,
                         CASE WHEN n_missing = 1 THEN '' ELSE 's' END);
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT count(*) INTO n_recent FROM gpu_events
     WHERE host_id = p_host AND closed_at IS NULL AND last_seen > now() - interval '1 hour';
    IF n_recent > 0 THEN
        SELECT kind, code, gpu_uuid, pci_bus_id, message INTO ev FROM gpu_events
         WHERE host_id = p_host AND closed_at IS NULL AND last_seen > now() - interval '1 hour'
         ORDER BY last_seen DESC, id DESC LIMIT 1;
        health := 'degraded';
        reason := format('%s event%s in the last hour, the latest %s', n_recent,
                         CASE WHEN n_recent = 1 THEN '' ELSE 's' END,
                         monitor_event_words(ev.kind, ev.code, ev.gpu_uuid, ev.pci_bus_id, ev.message));
        RETURN NEXT;
        RETURN;
    END IF;
    IF m.missed > 0 THEN
        health := 'degraded';
        reason := format('%s sample%s missed (unreachable after %s)%s', m.missed,
                         CASE WHEN m.missed = 1 THEN '' ELSE 's' END, v_after,
                         coalesce(': ' || nullif(m.miss_reason, ''), ''));
        RETURN NEXT;
        RETURN;
    END IF;
    health := 'ok';
    SELECT count(*) INTO n_recent FROM gpu_events WHERE host_id = p_host AND closed_at IS NULL;
    reason := CASE WHEN n_recent > 0
                   THEN format('%s open event%s, none seen in the last hour', n_recent,
                               CASE WHEN n_recent = 1 THEN '' ELSE 's' END)
                   ELSE 'the last sample shows no open event' END;
    RETURN NEXT;
END $$;
COMMENT ON FUNCTION monitor_health_of(uuid) IS 'A host''s health summary now (see migrations/0017): (health, reason); no row when the host or its host_monitor row does not exist.';

-- Evaluates a host's health and, when it changed, stores it and emits host.health. Its
-- host_monitor row is locked first; a row another transaction holds is skipped (that
-- transaction, a sample or a miss, evaluates it at its own commit, or the next sample
-- does): a host's health never waits on, or deadlocks with, the monitor.
CREATE FUNCTION monitor_health_refresh(p_host uuid) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    m record;
    v record;
    h record;
BEGIN
    SELECT health, state, last_sample_at, missed INTO m FROM host_monitor
     WHERE host_id = p_host FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SELECT * INTO v FROM monitor_health_of(p_host);
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    v.reason := left(v.reason, 1024);
    IF v.health IS DISTINCT FROM m.health THEN
        UPDATE host_monitor SET health = v.health, health_reason = v.reason,
                                health_changed_at = now(), state = v.health
         WHERE host_id = p_host;
        SELECT name, pool_id INTO h FROM hosts WHERE id = p_host;
        PERFORM events_emit('host.health', h.pool_id, p_host, jsonb_build_object(
            'host_name', h.name, 'from', m.health, 'to', v.health, 'reason', v.reason,
            'last_sample_at', to_char(m.last_sample_at AT TIME ZONE 'UTC',
                                      'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
            'missed', m.missed));
    ELSIF m.state IS DISTINCT FROM v.health THEN
        UPDATE host_monitor SET state = v.health, health_reason = v.reason WHERE host_id = p_host;
    ELSE
        UPDATE host_monitor SET health_reason = v.reason
         WHERE host_id = p_host AND health_reason IS DISTINCT FROM v.reason;
    END IF;
    RETURN v.health;
END $$;
COMMENT ON FUNCTION monitor_health_refresh(uuid) IS 'Re-evaluates a host''s health (monitor_health_of); on a change stores it in host_monitor and emits host.health {host_name, from, to, reason, last_sample_at, missed}. Skips a host_monitor row locked by another transaction. Returns the health, or NULL when skipped.';

-- Deferred to the commit: once per row change, but only the first evaluation of a
-- transaction can find a change.
CREATE FUNCTION monitor_health_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'hosts' THEN
        PERFORM monitor_health_refresh(NEW.id);
    ELSE
        PERFORM monitor_health_refresh(NEW.host_id);
    END IF;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION monitor_health_trigger() IS 'Deferred trigger: re-evaluates the health of the row''s host at commit.';

-- A sample stored (monitor_store writes last_sample_at) or missed (missed).
CREATE CONSTRAINT TRIGGER monitor_health_sample AFTER INSERT OR UPDATE OF last_sample_at, missed
    ON host_monitor DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION monitor_health_trigger();
-- An event closed outside a sample (monitor_close_events: the host returned to service).
CREATE CONSTRAINT TRIGGER monitor_health_closed AFTER UPDATE OF closed_at ON gpu_events
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.closed_at IS NULL AND NEW.closed_at IS NOT NULL)
    EXECUTE FUNCTION monitor_health_trigger();
-- A state change (unreachable and back).
CREATE CONSTRAINT TRIGGER monitor_health_state AFTER UPDATE OF state ON hosts
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION monitor_health_trigger();

-- gpu.event: one per gpu_events row, when it is inserted (counting a repeat updates it).
CREATE FUNCTION events_gpu_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    h record;
BEGIN
    SELECT x.name, x.pool_id INTO h FROM hosts x WHERE x.id = NEW.host_id;
    PERFORM events_emit('gpu.event', h.pool_id, NEW.host_id, jsonb_build_object(
        'gpu_event_id', NEW.id, 'host_name', h.name, 'gpu_uuid', NEW.gpu_uuid,
        'gpu_index', (SELECT g.index FROM gpus g WHERE g.uuid = NEW.gpu_uuid),
        'pci_bus_id', NEW.pci_bus_id, 'kind', NEW.kind, 'code', NEW.code,
        'category', NEW.category, 'policy', NEW.policy, 'message', NEW.message,
        'first_seen', to_char(NEW.first_seen AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')));
    RETURN NULL;
END $$;
CREATE TRIGGER events_gpu_events AFTER INSERT ON gpu_events
    FOR EACH ROW EXECUTE FUNCTION events_gpu_events();
COMMENT ON FUNCTION events_gpu_events() IS 'Event gpu.event for every gpu_events row inserted (an event opened, or seen again after it closed).';
