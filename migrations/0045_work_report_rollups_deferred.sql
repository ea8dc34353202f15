-- 0045_work_report_rollups_deferred: the rollups leave the work reports' insert (issue 28,
-- item 4). Since 0010 the statement trigger work_reports_rollup added every INSERT's
-- reports to the hour, quarter, day and week rollups in the inserting transaction: four
-- INSERT ... ON CONFLICT DO UPDATE per batch, about half of what PostgreSQL spent on a
-- batch of 1,000 reports (bench/costs' fixture, 2026-12-08: 20 batches in 1,237 ms with
-- the trigger, 672 ms with this one, medians of 5), and the API ingested at 0.25-0.39 times
-- a raw COPY of the same rows.
--
-- Now the trigger only records which reports the statement inserted: one row in
-- work_report_rollup_pending holding their seq values as a multirange (a batch's seqs are
-- one or a few runs; a 1,000-report batch is one row of a few dozen bytes). The reports are
-- added to the rollups later, by work_report_rollups_settle(), in its own short
-- transaction:
--   * by the server's rollup pass (GPUFLEET_ROLLUP_INTERVAL_MS, every second by default), so
--     the backlog stays small, and
--   * by every reader of the rollups before it reads (costs, recommendations, placement,
--     bottlenecks, budgets, rollout costs: service/rollups.c), so a read counts every report
--     committed before it started, as before: reads stay exact. A reader whose settle fails
--     fails too (it never answers from rollups that may lack reports).
-- The settle runs the old trigger's four statements (0035) over the pending reports, read
-- back by seq range through work_reports' seq index instead of the transition table. The
-- figures are the same, except that a bucket's floating-point sums may differ in their
-- last bits, as they did before between two ways of batching the same reports (a settle
-- adds several batches' reports at once). It takes an advisory lock first, so two settles
-- never fold the same reports: the second waits for the first to commit, then finds its
-- rows gone. A report whose host was deleted meanwhile is gone with its host (ON DELETE
-- CASCADE) and is not folded; the settle locks the hosts it folds (FOR KEY SHARE, in id
-- order) before it reads their reports, and a host's deletion locks its row
-- (host_transition, FOR UPDATE) before it deletes its hour and quarter rows, so a host
-- deletion and a settle never interleave (the hour and quarter rollups have no foreign
-- key: 0010).

CREATE TABLE work_report_rollup_pending (
    seqs     int8multirange NOT NULL CHECK (NOT isempty(seqs)),
    added_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE work_report_rollup_pending IS 'Work reports inserted but not yet added to the rollups: one row per INSERT statement on work_reports (the trigger work_reports_rollup), emptied by work_report_rollups_settle().';
COMMENT ON COLUMN work_report_rollup_pending.seqs IS 'The work_reports.seq values the statement inserted.';
COMMENT ON COLUMN work_report_rollup_pending.added_at IS 'When the inserting transaction started (the backlog''s age).';

-- The statement trigger keeps its name, its transition table and ENABLE ALWAYS (it fires
-- under session_replication_role = replica too, as bench/costs' bulk load uses): only its
-- function changes. The runs of consecutive seqs (gaps and islands) make the multirange.
CREATE OR REPLACE FUNCTION work_reports_rollup() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO work_report_rollup_pending (seqs)
    SELECT range_agg(int8range(lo, hi, '[]'))
      FROM (SELECT min(seq) AS lo, max(seq) AS hi
              FROM (SELECT seq, seq - row_number() OVER (ORDER BY seq) AS run FROM new_reports) s
             GROUP BY run) r
    HAVING count(*) > 0;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION work_reports_rollup() IS 'Statement trigger on work_reports: records the statement''s new reports in work_report_rollup_pending; work_report_rollups_settle() adds them to the rollups (0045; before, it added them itself: 0010, 0032, 0035).';

-- Adds the pending reports to the four rollups, at most p_max of them (the lowest seqs):
-- the rest goes back to work_report_rollup_pending as one row. settled: how many pending
-- reports it found (those of a host deleted meanwhile are gone and not counted); remaining:
-- how many seqs it put back (0: every pending row this settle could see is settled). A
-- caller that must see every report settles again, each time in a new transaction, until
-- remaining is 0 (service/rollups.c): the bound keeps each transaction well inside the
-- statement timeout whatever the backlog (a bulk COPY of millions of reports is one row),
-- so a large backlog is settled piecewise instead of timing out and rolling back forever.
-- No JIT: the planner cannot tell how few reports a multirange holds (it guesses 100 runs
-- of 30,000), and compiling each statement cost more than running it (0.5 s a statement).
CREATE FUNCTION work_report_rollups_settle(p_max bigint DEFAULT 50000, OUT settled bigint,
                                           OUT remaining bigint)
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    grain text;
    todo int8multirange;
    oldest timestamptz;
    cut bigint;
    hs uuid[];
BEGIN
    settled := 0;
    remaining := 0;
    IF p_max IS NULL OR p_max < 1 THEN
        RAISE EXCEPTION 'work_report_rollups_settle: p_max must be at least 1';
    END IF;
    -- one settle at a time (key: hashtext('gpufleet.rollups.settle')); a second waits
    -- here, then its statements see what the first committed
    PERFORM pg_advisory_xact_lock(hashtext('gpufleet.rollups.settle'));
    WITH d AS (DELETE FROM work_report_rollup_pending RETURNING seqs, added_at)
    SELECT range_agg(r), min(d.added_at) INTO todo, oldest FROM d, unnest(d.seqs) AS r;
    IF todo IS NULL THEN
        RETURN;
    END IF;
    -- more than p_max: the first p_max seqs now, the others back
    SELECT lower(x.r) + (p_max - (x.upto - (upper(x.r) - lower(x.r)))) INTO cut
      FROM (SELECT r, sum(upper(r) - lower(r)) OVER (ORDER BY r) AS upto FROM unnest(todo) AS r) x
     WHERE x.upto > p_max ORDER BY x.r LIMIT 1;
    IF cut IS NOT NULL THEN
        INSERT INTO work_report_rollup_pending (seqs, added_at)
        VALUES (todo * int8multirange(int8range(cut, NULL)), oldest);
        SELECT sum(upper(r) - lower(r)) INTO remaining
          FROM unnest(todo * int8multirange(int8range(cut, NULL))) AS r;
        todo := todo * int8multirange(int8range(NULL, cut));
    END IF;
    SELECT count(*), array_agg(DISTINCT w.host_id) INTO settled, hs
      FROM unnest(todo) AS r, work_reports w WHERE w.seq >= lower(r) AND w.seq < upper(r);
    -- the hosts first, in id order, as a host's deletion locks its row before its rollups;
    -- the reports of a host deleted meanwhile are gone with it (the statements below read
    -- them again, each with a new snapshot)
    PERFORM 1 FROM hosts h WHERE h.id = ANY (hs) ORDER BY h.id FOR KEY SHARE;
    -- the trigger's statement of 0035, per rollup, over the pending reports (read back by
    -- seq range through the seq index) instead of the transition table
    FOREACH grain IN ARRAY ARRAY['hour', 'quarter', 'day', 'week'] LOOP
        EXECUTE format($sql$
            WITH new_reports AS MATERIALIZED (
                SELECT w.* FROM unnest($1::int8multirange) AS r, work_reports w
                 WHERE w.seq >= lower(r) AND w.seq < upper(r))
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
            'work_report_' || grain || 's_key') USING todo;
    END LOOP;
END
$$;
COMMENT ON FUNCTION work_report_rollups_settle(bigint) IS 'Adds the reports recorded in work_report_rollup_pending, at most p_max of them (the rest is put back), to the hour, quarter, day and week rollups; settled: the reports it found, remaining: the seqs it put back. One at a time (an advisory lock); readers of the rollups call it first, until remaining is 0 (0045).';

COMMENT ON TABLE work_report_hours IS 'Work reports summed per UTC hour of window_start, host, brief and unit; work_report_rollups_settle() adds the reports the trigger work_reports_rollup recorded as pending.';
COMMENT ON TABLE work_report_days IS 'Work reports summed per UTC day of window_start, host, brief and unit; work_report_rollups_settle() adds the reports the trigger work_reports_rollup recorded as pending.';
COMMENT ON TABLE work_report_quarters IS 'Work reports summed per 6 hours (from 00:00 UTC) of window_start, host, brief and unit; work_report_rollups_settle() adds the reports the trigger work_reports_rollup recorded as pending.';
COMMENT ON TABLE work_report_weeks IS 'Work reports summed per ISO week (from Monday 00:00 UTC) of window_start, host, brief and unit; work_report_rollups_settle() adds the reports the trigger work_reports_rollup recorded as pending.';
