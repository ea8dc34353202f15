-- 0010_work_report_rollups: work reports summed per host and hour, quarter, day and week,
-- kept up to date by the statement that stores them, so that cost reports and recommendations over long
-- windows read rollup rows instead of every report (issue 6, performance). Pools get
-- their recommendation thresholds filled in.

-- One row per host, bucket, brief and unit. A report belongs to the bucket that holds its
-- window_start (as it belongs to the cost window that holds its window_start). Buckets are
-- UTC hours, 6-hour quarters, UTC days and ISO weeks (from Monday). Only the bucket-first
-- key is indexed: a batch of reports for one hour touches one place of it, where an index
-- led by host_id would take one random page per record. So the hour and quarter rollups
-- have no foreign key to hosts either (a cascade would scan them): deleting a host deletes
-- their rows by the buckets of its reports (db/hosts.c), and every reader joins rollup
-- rows to hosts anyway. The day and week rollups are small and cascade.
CREATE TABLE work_report_hours (
    bucket             timestamptz NOT NULL,
    host_id            uuid NOT NULL,
    brief_id           uuid,
    unit               text NOT NULL,
    reports            integer NOT NULL,
    completed          float8 NOT NULL,
    failed             float8 NOT NULL,
    retried            float8 NOT NULL,
    busy_seconds       float8 NOT NULL,
    covered_seconds    float8 NOT NULL,
    storage_gb_seconds float8 NOT NULL,
    storage_seconds    float8 NOT NULL,
    bytes_moved        float8 NOT NULL,
    min_start          timestamptz NOT NULL,
    max_end            timestamptz NOT NULL,
    useful_end         timestamptz,
    p95_max            float8,
    queue_max          float8,
    CONSTRAINT work_report_hours_key UNIQUE NULLS NOT DISTINCT (bucket, host_id, brief_id, unit)
) WITH (fillfactor = 90);

CREATE TABLE work_report_days (LIKE work_report_hours INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
    WITH (fillfactor = 90);
ALTER TABLE work_report_days
    ADD CONSTRAINT work_report_days_key UNIQUE NULLS NOT DISTINCT (bucket, host_id, brief_id, unit),
    ADD FOREIGN KEY (host_id) REFERENCES hosts (id) ON DELETE CASCADE;
-- Quarters: 6-hour buckets from 00:00 UTC (00, 06, 12, 18), for windows that are not
-- whole days (the last 24 h of the recommendations).
CREATE TABLE work_report_quarters (LIKE work_report_hours INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
    WITH (fillfactor = 90);
ALTER TABLE work_report_quarters
    ADD CONSTRAINT work_report_quarters_key UNIQUE NULLS NOT DISTINCT (bucket, host_id, brief_id, unit);
CREATE TABLE work_report_weeks (LIKE work_report_hours INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
    WITH (fillfactor = 90);
ALTER TABLE work_report_weeks
    ADD CONSTRAINT work_report_weeks_key UNIQUE NULLS NOT DISTINCT (bucket, host_id, brief_id, unit),
    ADD FOREIGN KEY (host_id) REFERENCES hosts (id) ON DELETE CASCADE;

-- Fill factors: with pages filled to the brim, VACUUM records the last few free bytes of
-- every page, and each new row of a batch then lands on a different old page (one read
-- and one full-page WAL image per row). Keeping 10% (rollups: room for HOT updates of a
-- bucket's row too) or 5% (reports, never updated) aside makes inserts append instead.
ALTER TABLE work_reports SET (fillfactor = 95);

COMMENT ON TABLE work_report_hours IS 'Work reports summed per UTC hour of window_start, host, brief and unit; maintained by the trigger work_reports_rollup.';
COMMENT ON TABLE work_report_days IS 'Work reports summed per UTC day of window_start, host, brief and unit; maintained by the trigger work_reports_rollup.';
COMMENT ON TABLE work_report_quarters IS 'Work reports summed per 6 hours (from 00:00 UTC) of window_start, host, brief and unit; maintained by the trigger work_reports_rollup.';
COMMENT ON TABLE work_report_weeks IS 'Work reports summed per ISO week (from Monday 00:00 UTC) of window_start, host, brief and unit; maintained by the trigger work_reports_rollup.';
COMMENT ON COLUMN work_report_hours.covered_seconds IS 'Σ report window lengths.';
COMMENT ON COLUMN work_report_hours.storage_gb_seconds IS 'Σ storage_gb × window length over the reports that gave storage_gb.';
COMMENT ON COLUMN work_report_hours.storage_seconds IS 'Σ window length over the reports that gave storage_gb.';
COMMENT ON COLUMN work_report_hours.useful_end IS 'Latest window_end of a report with completed > 0 or busy_seconds > 0.';

-- The rollups follow every insert into work_reports, however it is made (the API's
-- batch insert, COPY): one statement-level trigger sums the statement's new rows per
-- bucket and adds them in. Work reports are never updated; a host's deletion cascades.
CREATE FUNCTION work_reports_rollup() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    grain text;
BEGIN
    -- The same statement for every rollup; EXECUTE sees the transition table too.
    FOREACH grain IN ARRAY ARRAY['hour', 'quarter', 'day', 'week'] LOOP
        EXECUTE format($sql$
            INSERT INTO %1$I AS o
            SELECT %2$s, host_id, brief_id, unit, count(*),
                   sum(completed), sum(failed), sum(retried), sum(busy_seconds),
                   sum(extract(epoch FROM window_end - window_start)::float8),
                   coalesce(sum(storage_gb
                                * extract(epoch FROM window_end - window_start)::float8), 0),
                   coalesce(sum(extract(epoch FROM window_end - window_start)::float8)
                            FILTER (WHERE storage_gb IS NOT NULL), 0),
                   coalesce(sum(bytes_moved), 0), min(window_start), max(window_end),
                   max(window_end) FILTER (WHERE completed > 0 OR busy_seconds > 0),
                   max(p95_latency_ms), max(queue_delay_ms)
            FROM new_reports GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
            ON CONFLICT ON CONSTRAINT %3$I DO UPDATE SET
                reports = o.reports + excluded.reports,
                completed = o.completed + excluded.completed,
                failed = o.failed + excluded.failed, retried = o.retried + excluded.retried,
                busy_seconds = o.busy_seconds + excluded.busy_seconds,
                covered_seconds = o.covered_seconds + excluded.covered_seconds,
                storage_gb_seconds = o.storage_gb_seconds + excluded.storage_gb_seconds,
                storage_seconds = o.storage_seconds + excluded.storage_seconds,
                bytes_moved = o.bytes_moved + excluded.bytes_moved,
                min_start = least(o.min_start, excluded.min_start),
                max_end = greatest(o.max_end, excluded.max_end),
                useful_end = greatest(o.useful_end, excluded.useful_end),
                p95_max = greatest(o.p95_max, excluded.p95_max),
                queue_max = greatest(o.queue_max, excluded.queue_max)
            $sql$, 'work_report_' || grain || 's',
            CASE grain WHEN 'quarter'
                THEN $b$date_bin('6 hours', window_start, timestamptz '2000-01-01 00:00Z')$b$
                ELSE format('date_trunc(%L, window_start, %L)', grain, 'UTC') END,
            'work_report_' || grain || 's_key');
    END LOOP;
    RETURN NULL;
END
$$;

-- Reports already stored: the rollups start from them (rows in bucket order, the order
-- in which reports arrive and in which windows read them).
INSERT INTO work_report_hours
SELECT date_trunc('hour', window_start, 'UTC'), host_id, brief_id, unit, count(*), sum(completed),
       sum(failed), sum(retried), sum(busy_seconds),
       sum(extract(epoch FROM window_end - window_start)::float8),
       coalesce(sum(storage_gb * extract(epoch FROM window_end - window_start)::float8), 0),
       coalesce(sum(extract(epoch FROM window_end - window_start)::float8)
                FILTER (WHERE storage_gb IS NOT NULL), 0),
       coalesce(sum(bytes_moved), 0), min(window_start), max(window_end),
       max(window_end) FILTER (WHERE completed > 0 OR busy_seconds > 0), max(p95_latency_ms),
       max(queue_delay_ms)
FROM work_reports GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4;

INSERT INTO work_report_quarters
SELECT date_bin('6 hours', bucket, timestamptz '2000-01-01 00:00Z'), host_id, brief_id, unit,
       sum(reports), sum(completed), sum(failed), sum(retried), sum(busy_seconds),
       sum(covered_seconds), sum(storage_gb_seconds), sum(storage_seconds), sum(bytes_moved),
       min(min_start), max(max_end), max(useful_end), max(p95_max), max(queue_max)
FROM work_report_hours GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4;

INSERT INTO work_report_days
SELECT date_trunc('day', bucket, 'UTC'), host_id, brief_id, unit, sum(reports), sum(completed),
       sum(failed), sum(retried), sum(busy_seconds), sum(covered_seconds),
       sum(storage_gb_seconds), sum(storage_seconds), sum(bytes_moved), min(min_start),
       max(max_end), max(useful_end), max(p95_max), max(queue_max)
FROM work_report_hours GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4;

INSERT INTO work_report_weeks
SELECT date_trunc('week', bucket, 'UTC'), host_id, brief_id, unit, sum(reports), sum(completed),
       sum(failed), sum(retried), sum(busy_seconds), sum(covered_seconds),
       sum(storage_gb_seconds), sum(storage_seconds), sum(bytes_moved), min(min_start),
       max(max_end), max(useful_end), max(p95_max), max(queue_max)
FROM work_report_days GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4;

CREATE TRIGGER work_reports_rollup AFTER INSERT ON work_reports
    REFERENCING NEW TABLE AS new_reports
    FOR EACH STATEMENT EXECUTE FUNCTION work_reports_rollup();
-- ALWAYS: also under session_replication_role = replica (bulk loads that skip the
-- foreign-key checks, logical replication), or the rollups would miss those reports.
ALTER TABLE work_reports ENABLE ALWAYS TRIGGER work_reports_rollup;

-- Pools: the recommendation thresholds with their defaults, as api/pools.c fills them
-- in for new pools. The spec is compact JSON text served byte for byte: the member is
-- appended to the text, not re-rendered through jsonb.
UPDATE pools
SET spec = (left(rtrim(spec::text), -1) || ',"recommendation_thresholds":{"scale_up_utilization":0.85,'
            '"scale_down_utilization":0.3,"investigate_failed_share":0.05,'
            '"investigate_cost_increase":0.25}}')::json
WHERE spec -> 'recommendation_thresholds' IS NULL;
