-- 0007_work_reports: work reports from hosts (completed, failed and retried units, busy
-- time, latency, bytes moved, storage) — the usage side of cost per completed work.

CREATE TABLE work_reports (
    seq            bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    host_id        uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
    brief_id       uuid REFERENCES briefs (id) ON DELETE RESTRICT,
    window_start   timestamptz NOT NULL,
    window_end     timestamptz NOT NULL,
    unit           text NOT NULL CHECK (unit IN ('tokens', 'requests', 'items', 'samples', 'vectors')),
    completed      bigint NOT NULL CHECK (completed >= 0),
    failed         bigint NOT NULL CHECK (failed >= 0),
    retried        bigint NOT NULL CHECK (retried >= 0),
    busy_seconds   double precision NOT NULL CHECK (busy_seconds >= 0),
    p95_latency_ms double precision CHECK (p95_latency_ms >= 0),
    queue_delay_ms double precision CHECK (queue_delay_ms >= 0),
    bytes_moved    bigint CHECK (bytes_moved >= 0),
    storage_gb     double precision CHECK (storage_gb >= 0),
    reported_by    text NOT NULL,
    received_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (window_end > window_start),
    CHECK (window_end - window_start <= interval '24 hours'),
    CHECK (busy_seconds <= extract(epoch FROM window_end - window_start)),
    -- The idempotency key: an identical re-send is counted once, a different one refused.
    UNIQUE (host_id, window_start, window_end, unit)
);
-- Cost windows select reports by window_start.
CREATE INDEX work_reports_window ON work_reports (window_start);
CREATE INDEX work_reports_brief ON work_reports (brief_id) WHERE brief_id IS NOT NULL;

COMMENT ON TABLE work_reports IS 'Usage reported by hosts or their automation, one row per host, window and unit (PRODUCT.md §6). A report belongs to the cost window that contains its window_start.';
COMMENT ON COLUMN work_reports.seq IS 'Arrival order; the keyset for pagination.';
COMMENT ON COLUMN work_reports.id IS 'Public identifier.';
COMMENT ON COLUMN work_reports.host_id IS 'The host that did the work.';
COMMENT ON COLUMN work_reports.brief_id IS 'The brief the work was for, when the reporter names one (costs grouped by brief).';
COMMENT ON COLUMN work_reports.window_start IS 'Start of the reported window (inclusive).';
COMMENT ON COLUMN work_reports.window_end IS 'End of the reported window (exclusive); at most 24 h after the start.';
COMMENT ON COLUMN work_reports.unit IS 'What the counts count: tokens, requests, items, samples or vectors.';
COMMENT ON COLUMN work_reports.completed IS 'Units completed successfully in the window.';
COMMENT ON COLUMN work_reports.failed IS 'Units that failed.';
COMMENT ON COLUMN work_reports.retried IS 'Units retried (work done again).';
COMMENT ON COLUMN work_reports.busy_seconds IS 'Seconds of the window the host was doing work; at most the window.';
COMMENT ON COLUMN work_reports.p95_latency_ms IS '95th percentile latency in the window, milliseconds.';
COMMENT ON COLUMN work_reports.queue_delay_ms IS 'Queue delay in the window, milliseconds.';
COMMENT ON COLUMN work_reports.bytes_moved IS 'Bytes moved in or out (priced at the pool''s egress_price_per_gb, decimal GB).';
COMMENT ON COLUMN work_reports.storage_gb IS 'Storage in use during the window, decimal GB (priced at storage_price_per_gb_month).';
COMMENT ON COLUMN work_reports.reported_by IS 'JWT sub of the reporter.';
COMMENT ON COLUMN work_reports.received_at IS 'When the report was first stored.';

-- Held time reads a host's changes in time order.
CREATE INDEX host_state_history_host_at ON host_state_history (host_id, at);
