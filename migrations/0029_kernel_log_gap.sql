-- 0029_kernel_log_gap: the health monitor reads the kernel log forward from its cursor in
-- bounded pages (issue 25); when a host is further behind than it reads later
-- (GPUFLEET_MONITOR_KMSG_BACKLOG), it skips to the newest entry and records a
-- kernel_log_gap event whose message says how many entries were skipped, never silently.
-- The event kind is admitted by the table and by monitor_store().

ALTER TABLE gpu_events DROP CONSTRAINT gpu_events_kind_check;
ALTER TABLE gpu_events ADD CONSTRAINT gpu_events_kind_check
    CHECK (kind IN ('xid', 'sxid', 'fell_off_bus', 'ecc', 'remap', 'fabric', 'thermal',
                    'gpu_missing', 'container_runtime', 'unreachable', 'gpu_excess',
                    'gpu_uuid_duplicate', 'kernel_log_gap'));
COMMENT ON COLUMN gpu_events.kind IS 'xid, sxid, fell_off_bus, ecc (uncorrectable errors grew), remap (row remapping failed), fabric (state not Completed/Success), thermal, gpu_missing, container_runtime, unreachable, gpu_excess (a sample listed more GPUs than the pool''s gpu_count + 2), gpu_uuid_duplicate (a UUID new to this host that another host reports), kernel_log_gap (kernel log entries skipped unread: the message says how many).';

-- monitor_store() checks each event's kind against a constant: the one change to its
-- definition, made on the definition in place (whichever migration wrote it last), so that
-- nothing else of it is restated here. It fails loudly when the constant is not there.
DO $$
DECLARE
    d text := pg_get_functiondef('monitor_store(uuid, jsonb)'::regprocedure);
    old_kinds CONSTANT text := '|container_runtime|unreachable|gpu_excess|gpu_uuid_duplicate)$''';
BEGIN
    IF position(old_kinds IN d) = 0 THEN
        RAISE EXCEPTION 'monitor_store: its list of event kinds was not found';
    END IF;
    EXECUTE replace(d, old_kinds, '|container_runtime|unreachable|gpu_excess|gpu_uuid_duplicate|kernel_log_gap)$''');
END $$;
