-- 0033_bottleneck_indexes: the bottleneck read of a brief (GET /v1/bottlenecks?brief=, issue
-- 26 item 4) reads the rollup rows of one brief over a window. The rollups are keyed bucket
-- first (0010: a batch of reports for one hour touches one place of the key), so a brief's
-- rows were a scan of every host's rows of the window. An index led by brief_id keeps that
-- property: within a brief, new rows arrive in bucket order at its right end (one hot page
-- per brief, no random page per record, unlike an index led by host_id). Reports without a
-- brief are left out (partial). A pool's or a host's read needs none: it probes the
-- existing key per (bucket, host) (db/bottlenecks.c).
CREATE INDEX work_report_hours_brief ON work_report_hours (brief_id, bucket) WHERE brief_id IS NOT NULL;
CREATE INDEX work_report_quarters_brief ON work_report_quarters (brief_id, bucket) WHERE brief_id IS NOT NULL;
CREATE INDEX work_report_days_brief ON work_report_days (brief_id, bucket) WHERE brief_id IS NOT NULL;
CREATE INDEX work_report_weeks_brief ON work_report_weeks (brief_id, bucket) WHERE brief_id IS NOT NULL;

COMMENT ON INDEX work_report_hours_brief IS 'One brief''s rollup rows over a window (the bottleneck read of a brief).';
COMMENT ON INDEX work_report_quarters_brief IS 'One brief''s rollup rows over a window (the bottleneck read of a brief).';
COMMENT ON INDEX work_report_days_brief IS 'One brief''s rollup rows over a window (the bottleneck read of a brief).';
COMMENT ON INDEX work_report_weeks_brief IS 'One brief''s rollup rows over a window (the bottleneck read of a brief).';
