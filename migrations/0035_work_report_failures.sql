-- 0035_work_report_failures: failure classes in work reports (issue 27, item 2). A report
-- record may carry "failures": how many of its failed and retried units failed for each
-- class (oom, timeout, data, hardware, preempted, other), any subset. The API checks that
-- they add up to at most failed + retried (a retry is a unit that failed once and ran
-- again, a failed unit one that failed for good: each is one failure to classify). They
-- are stored with the report and summed into the four rollups, so that the cost report
-- can split the cost of failed and retried work by class over the reports that classified
-- them (failures_reports and failures_units say how much of the failed and retried work
-- the classification covers; the rest is not broken down, never guessed).

-- NULL: the class was not given (a report without failures has all six NULL). The API
-- refuses an empty failures object, so a report classified its failures when one is not NULL.
ALTER TABLE work_reports
    ADD COLUMN failures_oom float8 CHECK (failures_oom >= 0),
    ADD COLUMN failures_timeout float8 CHECK (failures_timeout >= 0),
    ADD COLUMN failures_data float8 CHECK (failures_data >= 0),
    ADD COLUMN failures_hardware float8 CHECK (failures_hardware >= 0),
    ADD COLUMN failures_preempted float8 CHECK (failures_preempted >= 0),
    ADD COLUMN failures_other float8 CHECK (failures_other >= 0);

COMMENT ON COLUMN work_reports.failures_oom IS 'Failed or retried units of the window that failed for: out of GPU or host memory (failures.oom); NULL when not given.';
COMMENT ON COLUMN work_reports.failures_timeout IS 'Failed or retried units of the window that failed for: timed out (failures.timeout); NULL when not given.';
COMMENT ON COLUMN work_reports.failures_data IS 'Failed or retried units of the window that failed for: bad or unreadable input data (failures.data); NULL when not given.';
COMMENT ON COLUMN work_reports.failures_hardware IS 'Failed or retried units of the window that failed for: hardware fault (GPU, Xid, ECC, host) (failures.hardware); NULL when not given.';
COMMENT ON COLUMN work_reports.failures_preempted IS 'Failed or retried units of the window that failed for: preempted or evicted (failures.preempted); NULL when not given.';
COMMENT ON COLUMN work_reports.failures_other IS 'Failed or retried units of the window that failed for: any other cause (failures.other); NULL when not given.';

-- The rollups: Σ of each class (0 when no report of the bucket gave it), how many reports
-- classified their failures and Σ failed + retried of those reports (the classification's
-- coverage).
ALTER TABLE work_report_hours
    ADD COLUMN failures_oom float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_timeout float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_data float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_hardware float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_preempted float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_other float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_reports integer NOT NULL DEFAULT 0,
    ADD COLUMN failures_units float8 NOT NULL DEFAULT 0;
ALTER TABLE work_report_quarters
    ADD COLUMN failures_oom float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_timeout float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_data float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_hardware float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_preempted float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_other float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_reports integer NOT NULL DEFAULT 0,
    ADD COLUMN failures_units float8 NOT NULL DEFAULT 0;
ALTER TABLE work_report_days
    ADD COLUMN failures_oom float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_timeout float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_data float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_hardware float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_preempted float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_other float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_reports integer NOT NULL DEFAULT 0,
    ADD COLUMN failures_units float8 NOT NULL DEFAULT 0;
ALTER TABLE work_report_weeks
    ADD COLUMN failures_oom float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_timeout float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_data float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_hardware float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_preempted float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_other float8 NOT NULL DEFAULT 0,
    ADD COLUMN failures_reports integer NOT NULL DEFAULT 0,
    ADD COLUMN failures_units float8 NOT NULL DEFAULT 0;

COMMENT ON COLUMN work_report_hours.failures_reports IS 'Reports of the bucket that gave failures (failures_<class>: Σ of each class, 0 when none gave it).';
COMMENT ON COLUMN work_report_hours.failures_units IS 'Σ failed + retried of the reports that gave failures (the classification''s coverage).';
COMMENT ON COLUMN work_report_quarters.failures_reports IS 'Reports of the bucket that gave failures (failures_<class>: Σ of each class, 0 when none gave it).';
COMMENT ON COLUMN work_report_quarters.failures_units IS 'Σ failed + retried of the reports that gave failures (the classification''s coverage).';
COMMENT ON COLUMN work_report_days.failures_reports IS 'Reports of the bucket that gave failures (failures_<class>: Σ of each class, 0 when none gave it).';
COMMENT ON COLUMN work_report_days.failures_units IS 'Σ failed + retried of the reports that gave failures (the classification''s coverage).';
COMMENT ON COLUMN work_report_weeks.failures_reports IS 'Reports of the bucket that gave failures (failures_<class>: Σ of each class, 0 when none gave it).';
COMMENT ON COLUMN work_report_weeks.failures_units IS 'Σ failed + retried of the reports that gave failures (the classification''s coverage).';

-- The rollup trigger (0010, 0032), restated whole with the failure sums added (the phase
-- sums kept). Reports stored before this migration have no failures: the new columns'
-- default 0 is their sum.
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
                                   phase_reports, phase_busy_seconds, failures_oom,
                                   failures_timeout, failures_data, failures_hardware,
                                   failures_preempted, failures_other, failures_reports,
                                   failures_units)
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
                                                       phase_write_seconds) > 0), 0),
                   coalesce(sum(failures_oom), 0), coalesce(sum(failures_timeout), 0),
                   coalesce(sum(failures_data), 0), coalesce(sum(failures_hardware), 0),
                   coalesce(sum(failures_preempted), 0), coalesce(sum(failures_other), 0),
                   count(*) FILTER (WHERE num_nonnulls(failures_oom, failures_timeout,
                                                       failures_data, failures_hardware,
                                                       failures_preempted,
                                                       failures_other) > 0),
                   coalesce(sum(failed + retried)
                            FILTER (WHERE num_nonnulls(failures_oom, failures_timeout,
                                                       failures_data, failures_hardware,
                                                       failures_preempted,
                                                       failures_other) > 0), 0)
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
                phase_busy_seconds = o.phase_busy_seconds + excluded.phase_busy_seconds,
                failures_oom = o.failures_oom + excluded.failures_oom,
                failures_timeout = o.failures_timeout + excluded.failures_timeout,
                failures_data = o.failures_data + excluded.failures_data,
                failures_hardware = o.failures_hardware + excluded.failures_hardware,
                failures_preempted = o.failures_preempted + excluded.failures_preempted,
                failures_other = o.failures_other + excluded.failures_other,
                failures_reports = o.failures_reports + excluded.failures_reports,
                failures_units = o.failures_units + excluded.failures_units
            $sql$, 'work_report_' || grain || 's',
            CASE grain WHEN 'quarter'
                THEN $b$date_bin('6 hours', window_start, timestamptz '2000-01-01 00:00Z')$b$
                ELSE format('date_trunc(%L, window_start, %L)', grain, 'UTC') END,
            'work_report_' || grain || 's_key');
    END LOOP;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION work_reports_rollup() IS 'Statement trigger on work_reports: adds the statement''s new reports to the hour, quarter, day and week rollups (0010; phases since 0032; failure classes since 0035).';
