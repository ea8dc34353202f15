-- 0036_placement_reads: the placement of a brief (GET /v1/briefs/{id}/placement, issue 27)
-- counts the brief's days per pool and lists the hosts that ran it from the day rollup
-- through its brief index (0033). That read fetched every row of the brief from the heap
-- (about 103,000 rows, one random heap page each, at 10,000 hosts over 30 days) for two
-- columns the index lacked. The index now carries host_id too, so the count of days and
-- the hosts are an index-only scan; only the rows of the first and last days are read
-- from the heap (their first start and last end). host_id never changes in an upsert of
-- the rollup trigger, so the rollup's updates stay HOT-eligible (an INCLUDE of reports,
-- min_start or max_end would make every upsert of the day rollup a non-HOT update).
DROP INDEX work_report_days_brief;
CREATE INDEX work_report_days_brief ON work_report_days (brief_id, bucket) INCLUDE (host_id)
    WHERE brief_id IS NOT NULL;

COMMENT ON INDEX work_report_days_brief IS 'One brief''s rollup rows over a window (the bottleneck read of a brief), with their hosts (the placement''s index-only count of days and hosts per pool).';
