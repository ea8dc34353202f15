-- 0032_work_report_phases: a run-time breakdown in work reports (issue 26, item 3). A report
-- record may carry "phases": seconds spent per phase (queue and cold start, artifact download
-- or model load, CPU preprocessing, GPU compute, GPU-to-GPU or node-to-node communication,
-- output or checkpoint write), any subset. They are stored with the report and summed into
-- the four rollups like the rest, so that the cost report can split cost per completed unit
-- by phase and the bottleneck analysis can name the dominant phase, over the reports that
-- gave phases only (reports without phases are counted, not guessed: phase_reports and
-- phase_busy_seconds say how much of the work the breakdown covers).

-- NULL: the phase was not given (a report without phases has all six NULL). The API
-- refuses an empty phases object, so a report gave phases when one of them is not NULL.
ALTER TABLE work_reports
    ADD COLUMN phase_queue_seconds float8 CHECK (phase_queue_seconds >= 0),
    ADD COLUMN phase_load_seconds float8 CHECK (phase_load_seconds >= 0),
    ADD COLUMN phase_preprocess_seconds float8 CHECK (phase_preprocess_seconds >= 0),
    ADD COLUMN phase_compute_seconds float8 CHECK (phase_compute_seconds >= 0),
    ADD COLUMN phase_communication_seconds float8 CHECK (phase_communication_seconds >= 0),
    ADD COLUMN phase_write_seconds float8 CHECK (phase_write_seconds >= 0);

COMMENT ON COLUMN work_reports.phase_queue_seconds IS 'Seconds in queue and cold start in the window (phases.queue); NULL when not given.';
COMMENT ON COLUMN work_reports.phase_load_seconds IS 'Seconds of artifact download or model load (phases.load); NULL when not given.';
COMMENT ON COLUMN work_reports.phase_preprocess_seconds IS 'Seconds of CPU preprocessing or tokenization (phases.preprocess); NULL when not given.';
COMMENT ON COLUMN work_reports.phase_compute_seconds IS 'Seconds of GPU compute (phases.compute); NULL when not given.';
COMMENT ON COLUMN work_reports.phase_communication_seconds IS 'Seconds of GPU-to-GPU or node-to-node communication (phases.communication); NULL when not given.';
COMMENT ON COLUMN work_reports.phase_write_seconds IS 'Seconds of output, checkpoint or post-processing write (phases.write); NULL when not given.';

-- The rollups: Σ of each phase (0 when no report of the bucket gave it), how many reports
-- gave phases and Σ busy_seconds of those reports (the breakdown's coverage).
ALTER TABLE work_report_hours
    ADD COLUMN phase_queue_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_load_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_preprocess_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_compute_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_communication_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_write_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_reports integer NOT NULL DEFAULT 0,
    ADD COLUMN phase_busy_seconds float8 NOT NULL DEFAULT 0;
ALTER TABLE work_report_quarters
    ADD COLUMN phase_queue_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_load_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_preprocess_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_compute_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_communication_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_write_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_reports integer NOT NULL DEFAULT 0,
    ADD COLUMN phase_busy_seconds float8 NOT NULL DEFAULT 0;
ALTER TABLE work_report_days
    ADD COLUMN phase_queue_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_load_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_preprocess_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_compute_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_communication_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_write_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_reports integer NOT NULL DEFAULT 0,
    ADD COLUMN phase_busy_seconds float8 NOT NULL DEFAULT 0;
ALTER TABLE work_report_weeks
    ADD COLUMN phase_queue_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_load_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_preprocess_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_compute_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_communication_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_write_seconds float8 NOT NULL DEFAULT 0,
    ADD COLUMN phase_reports integer NOT NULL DEFAULT 0,
    ADD COLUMN phase_busy_seconds float8 NOT NULL DEFAULT 0;

COMMENT ON COLUMN work_report_hours.phase_queue_seconds IS 'Σ phases.queue of the bucket''s reports (0 when none gave it).';
COMMENT ON COLUMN work_report_hours.phase_load_seconds IS 'Σ phases.load of the bucket''s reports.';
COMMENT ON COLUMN work_report_hours.phase_preprocess_seconds IS 'Σ phases.preprocess of the bucket''s reports.';
COMMENT ON COLUMN work_report_hours.phase_compute_seconds IS 'Σ phases.compute of the bucket''s reports.';
COMMENT ON COLUMN work_report_hours.phase_communication_seconds IS 'Σ phases.communication of the bucket''s reports.';
COMMENT ON COLUMN work_report_hours.phase_write_seconds IS 'Σ phases.write of the bucket''s reports.';
COMMENT ON COLUMN work_report_hours.phase_reports IS 'Reports of the bucket that gave phases.';
COMMENT ON COLUMN work_report_hours.phase_busy_seconds IS 'Σ busy_seconds of the reports that gave phases (the breakdown''s coverage of busy_seconds).';
COMMENT ON COLUMN work_report_quarters.phase_reports IS 'Reports of the bucket that gave phases (phase_* columns: as in work_report_hours).';
COMMENT ON COLUMN work_report_quarters.phase_busy_seconds IS 'Σ busy_seconds of the reports that gave phases.';
COMMENT ON COLUMN work_report_days.phase_reports IS 'Reports of the bucket that gave phases (phase_* columns: as in work_report_hours).';
COMMENT ON COLUMN work_report_days.phase_busy_seconds IS 'Σ busy_seconds of the reports that gave phases.';
COMMENT ON COLUMN work_report_weeks.phase_reports IS 'Reports of the bucket that gave phases (phase_* columns: as in work_report_hours).';
COMMENT ON COLUMN work_report_weeks.phase_busy_seconds IS 'Σ busy_seconds of the reports that gave phases.';

-- The rollup trigger (0010), restated whole with the phase sums added. Reports stored
-- before this migration have no phases: the new columns' default 0 is their sum.
CREATE OR REPLACE FUNCTION work_reports_rollup() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    grain text;
BEGIN
    -- The same statement for every rollup; EXECUTE sees the transition table too.
    FOREACH grain IN ARRAY ARRAY['hour', 'quarter', 'day', 'week'] LOOP
        EXECUTE format($sql$
            INSERT INTO %1$I AS o (bucket, host_id, brief_id, unit, reports, completed, failed,
                                   retried, busy_seconds, covered_seconds, storage_gb_seconds,
                                   storage_seconds, bytes_moved, min_start, max_end, useful_end,
                                   p95_max, queue_max, phase_queue_seconds, phase_load_seconds,
                                   phase_preprocess_seconds, phase_compute_seconds,
                                   phase_communication_seconds, phase_write_seconds,
                                   phase_reports, phase_busy_seconds)
            SELECT %2$s, host_id, brief_id, unit, count(*),
                   sum(completed), sum(failed), sum(retried), sum(busy_seconds),
                   sum(extract(epoch FROM window_end - window_start)::float8),
                   coalesce(sum(storage_gb
                                * extract(epoch FROM window_end - window_start)::float8), 0),
                   coalesce(sum(extract(epoch FROM window_end - window_start)::float8)
                            FILTER (WHERE storage_gb IS NOT NULL), 0),
                   coalesce(sum(bytes_moved), 0), min(window_start), max(window_end),
                   max(window_end) FILTER (WHERE completed > 0 OR busy_seconds > 0),
                   max(p95_latency_ms), max(queue_delay_ms),
                   coalesce(sum(phase_queue_seconds), 0), coalesce(sum(phase_load_seconds), 0),
                   coalesce(sum(phase_preprocess_seconds), 0),
                   coalesce(sum(phase_compute_seconds), 0),
                   coalesce(sum(phase_communication_seconds), 0),
                   coalesce(sum(phase_write_seconds), 0),
                   count(*) FILTER (WHERE num_nonnulls(phase_queue_seconds, phase_load_seconds,
                                                       phase_preprocess_seconds,
                                                       phase_compute_seconds,
                                                       phase_communication_seconds,
                                                       phase_write_seconds) > 0),
                   coalesce(sum(busy_seconds)
                            FILTER (WHERE num_nonnulls(phase_queue_seconds, phase_load_seconds,
                                                       phase_preprocess_seconds,
                                                       phase_compute_seconds,
                                                       phase_communication_seconds,
                                                       phase_write_seconds) > 0), 0)
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
                queue_max = greatest(o.queue_max, excluded.queue_max),
                phase_queue_seconds = o.phase_queue_seconds + excluded.phase_queue_seconds,
                phase_load_seconds = o.phase_load_seconds + excluded.phase_load_seconds,
                phase_preprocess_seconds
                    = o.phase_preprocess_seconds + excluded.phase_preprocess_seconds,
                phase_compute_seconds = o.phase_compute_seconds + excluded.phase_compute_seconds,
                phase_communication_seconds
                    = o.phase_communication_seconds + excluded.phase_communication_seconds,
                phase_write_seconds = o.phase_write_seconds + excluded.phase_write_seconds,
                phase_reports = o.phase_reports + excluded.phase_reports,
                phase_busy_seconds = o.phase_busy_seconds + excluded.phase_busy_seconds
            $sql$, 'work_report_' || grain || 's',
            CASE grain WHEN 'quarter'
                THEN $b$date_bin('6 hours', window_start, timestamptz '2000-01-01 00:00Z')$b$
                ELSE format('date_trunc(%L, window_start, %L)', grain, 'UTC') END,
            'work_report_' || grain || 's_key');
    END LOOP;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION work_reports_rollup() IS 'Statement trigger on work_reports: adds the statement''s new reports to the hour, quarter, day and week rollups (0010; phases since 0032).';
