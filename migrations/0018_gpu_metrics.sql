-- 0018_gpu_metrics: what /metrics reads of the health monitor (issue 13, item 6).
--
-- The latest readings per GPU are in gpus already (monitor_store keeps them there), so the
-- per-GPU gauges are one read of gpus joined to its hosts, not a scan of gpu_samples.
--
-- The event counters (gpufleet_gpu_events_total) must never go down, and gpu_events is
-- not a counter: a closed event is history, and the next occurrence opens a new row, so a
-- sum over it is only monotonic for as long as no row is ever deleted, and its cost grows
-- with the history. gpu_event_counts keeps the running total per host, GPU, kind, code and
-- category instead, maintained by a trigger on gpu_events: each row inserted adds its
-- count, each update of a row's count adds the increase. Reading it costs one row per
-- series, whatever the history.

CREATE TABLE gpu_event_counts (
    host_id    uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
    gpu_uuid   text,
    kind       text NOT NULL,
    code       integer,
    category   text,
    total      bigint NOT NULL CHECK (total >= 1),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT gpu_event_counts_key UNIQUE NULLS NOT DISTINCT (host_id, gpu_uuid, kind, code, category)
);

COMMENT ON TABLE gpu_event_counts IS 'Occurrences of GPU health events ever recorded, per host, GPU, kind, code and category (the /metrics counter gpufleet_gpu_events_total). Maintained by the trigger gpu_event_counts on gpu_events; never decreases while the host exists.';
COMMENT ON COLUMN gpu_event_counts.host_id IS 'The host (gpu_events.host_id); the rows go with the host.';
COMMENT ON COLUMN gpu_event_counts.gpu_uuid IS 'The GPU (gpu_events.gpu_uuid); NULL for events of the host as a whole or of a GPU not identified.';
COMMENT ON COLUMN gpu_event_counts.kind IS 'gpu_events.kind (xid, sxid, fell_off_bus, ecc, ...).';
COMMENT ON COLUMN gpu_event_counts.code IS 'gpu_events.code (the Xid or SXid number); NULL for kinds without one.';
COMMENT ON COLUMN gpu_event_counts.category IS 'gpu_events.category (from the Xid catalog, or the kind''s own); NULL when none.';
COMMENT ON COLUMN gpu_event_counts.total IS 'Sum of gpu_events.count over every row with this key, open or closed: the occurrences recorded.';
COMMENT ON COLUMN gpu_event_counts.updated_at IS 'Last time total grew.';
COMMENT ON CONSTRAINT gpu_event_counts_key ON gpu_event_counts IS 'One counter per series (NULLs equal): the trigger''s upsert, and a host''s counters.';

CREATE FUNCTION gpu_event_counts_add() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    d bigint := NEW.count - CASE WHEN TG_OP = 'UPDATE' THEN OLD.count ELSE 0 END;
BEGIN
    IF d > 0 THEN
        INSERT INTO gpu_event_counts AS c (host_id, gpu_uuid, kind, code, category, total)
        VALUES (NEW.host_id, NEW.gpu_uuid, NEW.kind, NEW.code, NEW.category, d)
        ON CONFLICT (host_id, gpu_uuid, kind, code, category) DO UPDATE SET
            total = c.total + EXCLUDED.total, updated_at = now();
    END IF;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION gpu_event_counts_add() IS 'Trigger of gpu_events: adds a new row''s count, or the growth of a row''s count, to gpu_event_counts under the row''s (current) key.';

CREATE TRIGGER gpu_event_counts AFTER INSERT OR UPDATE OF count ON gpu_events
    FOR EACH ROW EXECUTE FUNCTION gpu_event_counts_add();
-- ALWAYS: also under session_replication_role = replica (bulk loads, logical
-- replication), or the counters would miss those events.
ALTER TABLE gpu_events ENABLE ALWAYS TRIGGER gpu_event_counts;

-- The events recorded before this migration.
INSERT INTO gpu_event_counts (host_id, gpu_uuid, kind, code, category, total)
SELECT host_id, gpu_uuid, kind, code, category, sum(count)
  FROM gpu_events GROUP BY host_id, gpu_uuid, kind, code, category;
