-- 0014_gpu_health: storage of the health monitor (issue 13, item 2). Each sample of a host
-- is one call of monitor_store(host, document): per-GPU readings go to the gpu_samples
-- time series and to the latest values in gpus; kernel-log and derived events go to
-- gpu_events, de-duplicated while open; the monitor's cursor and status to host_monitor.
-- gpu_samples_rollup() keeps 5-minute and 1-hour rollups incrementally behind a
-- watermark, and gpu_samples_prune() applies retention per grain in bounded batches.
--
-- gpu_samples is partitioned by time, with BRIN (at) and btree (host_id, at) in each
-- partition: chosen by bench/gpu_samples (see the comment above the table, and README.md,
-- "GPU health: storage and reads").

CREATE TABLE gpus (
    uuid                     text PRIMARY KEY CHECK (uuid ~ '^GPU-[0-9A-Fa-f-]{4,75}$'),
    host_id                  uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
    pci_bus_id               text CHECK (pci_bus_id ~ '^[0-9A-F]{8}:[0-9A-F]{2}:[01][0-9A-F]\.[0-7]$'),
    index                    integer CHECK (index BETWEEN 0 AND 1023),
    name                     text CHECK (length(name) BETWEEN 1 AND 128),
    first_seen               timestamptz NOT NULL,
    last_seen                timestamptz NOT NULL,
    util_gpu                 smallint CHECK (util_gpu BETWEEN 0 AND 100),
    util_mem                 smallint CHECK (util_mem BETWEEN 0 AND 100),
    mem_used_mib             integer CHECK (mem_used_mib >= 0),
    mem_total_mib            integer CHECK (mem_total_mib >= 0),
    temp_c                   smallint CHECK (temp_c BETWEEN -100 AND 250),
    power_w                  real CHECK (power_w >= 0),
    clock_event_reasons      bigint CHECK (clock_event_reasons >= 0),
    ecc_uncorrected_volatile bigint CHECK (ecc_uncorrected_volatile >= 0),
    retired_pages_pending    boolean,
    remapped_rows_pending    boolean,
    remapped_rows_failure    boolean,
    missing_since            timestamptz,
    CHECK (first_seen <= last_seen)
);
CREATE INDEX gpus_host ON gpus (host_id, index);
CREATE INDEX gpus_name ON gpus (name, uuid);

COMMENT ON TABLE gpus IS 'Every GPU the monitor has seen, by the UUID nvidia-smi prints, with its host and its latest readings (GET /v1/gpus, GET /v1/hosts/{id}/health). Written by monitor_store.';
COMMENT ON COLUMN gpus.uuid IS 'The GPU UUID as nvidia-smi prints it (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx); the keyset for pagination.';
COMMENT ON COLUMN gpus.host_id IS 'The host the GPU was last seen in (a GPU moved to another host follows it).';
COMMENT ON COLUMN gpus.pci_bus_id IS 'PCI address in nvidia-smi''s canonical form, 8-digit domain and uppercase hex (00000000:3B:00.0), as the kernel-log parsers produce it; joins an Xid line to its GPU.';
COMMENT ON COLUMN gpus.index IS 'nvidia-smi''s index of the GPU on its host (not stable across reboots; the UUID is).';
COMMENT ON COLUMN gpus.name IS 'Product name as nvidia-smi prints it (NVIDIA H100 80GB HBM3).';
COMMENT ON COLUMN gpus.first_seen IS 'Time of the first sample that listed the GPU.';
COMMENT ON COLUMN gpus.last_seen IS 'Time of the latest sample that listed the GPU: the readings below are that sample''s (a late, older sample does not overwrite them).';
COMMENT ON COLUMN gpus.util_gpu IS 'Latest utilization.gpu, percent; NULL when not read (never 0 for unknown).';
COMMENT ON COLUMN gpus.util_mem IS 'Latest utilization.memory, percent; NULL when not read.';
COMMENT ON COLUMN gpus.mem_used_mib IS 'Latest memory.used, MiB; NULL when not read.';
COMMENT ON COLUMN gpus.mem_total_mib IS 'Latest memory.total, MiB; NULL when not read.';
COMMENT ON COLUMN gpus.temp_c IS 'Latest temperature.gpu, degrees Celsius; NULL when not read.';
COMMENT ON COLUMN gpus.power_w IS 'Latest power.draw, watts; NULL when not read.';
COMMENT ON COLUMN gpus.clock_event_reasons IS 'Latest clocks_event_reasons.active, NVML''s bit mask (0x8 HW slowdown, 0x40 HW thermal, 0x80 HW power brake, ...); NULL when not read.';
COMMENT ON COLUMN gpus.ecc_uncorrected_volatile IS 'Latest ecc.errors.uncorrected.volatile.total (since the last driver load); NULL when not read or ECC is off.';
COMMENT ON COLUMN gpus.retired_pages_pending IS 'Latest retired_pages.pending (a page retirement waits for a reset); NULL when not read.';
COMMENT ON COLUMN gpus.remapped_rows_pending IS 'Latest remapped_rows.pending (a row remapping waits for a reset); NULL when not read.';
COMMENT ON COLUMN gpus.remapped_rows_failure IS 'Latest remapped_rows.failure (row remapping failed: the GPU needs service); NULL when not read.';
COMMENT ON COLUMN gpus.missing_since IS 'Set when a sample of its host listed GPUs but not this one (the time of that sample); cleared when it is listed again.';

-- The raw time series, partitioned by time (bench/gpu_samples, figures in README.md,
-- "GPU health: storage and reads"; 1,000 hosts x 8 GPUs x 1 sample a minute, 5.76 M rows):
--   * Each partition has BRIN (at) for the rollups' time ranges and btree (host_id, at) for
--     one host's samples (4 ms for an hour, 480 rows). BRIN alone made that read 255 ms;
--     btree (gpu_uuid, at) instead was as large as the table and cost 1,290 WAL bytes a
--     row; btree (at) instead of BRIN cost 70 more WAL bytes a row for nothing the reads use.
--   * Retention drops whole partitions: 0.2 s and 0.1 MiB of WAL for 1.44 M rows, where a
--     batched DELETE took 8.6-14 s and 263 MiB of WAL (about 2 GB of WAL a day for this
--     fleet), then vacuum; and a BRIN range whose rows were deleted and whose pages were
--     reused covers old and new times alike (the 60-minute rollup scan went from 0.37 s to
--     0.98 s after one retention cycle), which never happens to a new partition.
--   * Inserts cost the same as without partitions (255 WAL bytes a row, ~1,300 samples/s
--     from two clients on this machine's two cores, commit-bound).
-- Partitions are one day wide (gpu_samples_retention.width), created ahead by the
-- housekeeping (gpu_samples_prune) and on demand by monitor_store, and listed in
-- gpu_samples_partitions. No foreign key: a host's deletion would scan every partition for
-- its rows, and readers reach samples through an existing host anyway; the rows of a
-- deleted host go with retention. Every reading is NULL when the tool did not report it
-- (never 0).
CREATE TABLE gpu_samples (
    at                       timestamptz NOT NULL,
    host_id                  uuid NOT NULL,
    clock_event_reasons      bigint CHECK (clock_event_reasons >= 0),
    ecc_uncorrected_volatile bigint CHECK (ecc_uncorrected_volatile >= 0),
    mem_used_mib             integer CHECK (mem_used_mib >= 0),
    mem_total_mib            integer CHECK (mem_total_mib >= 0),
    power_w                  real CHECK (power_w >= 0),
    util_gpu                 smallint CHECK (util_gpu BETWEEN 0 AND 100),
    util_mem                 smallint CHECK (util_mem BETWEEN 0 AND 100),
    temp_c                   smallint CHECK (temp_c BETWEEN -100 AND 250),
    retired_pages_pending    boolean,
    remapped_rows_pending    boolean,
    remapped_rows_failure    boolean,
    gpu_uuid                 text NOT NULL
) PARTITION BY RANGE (at);
CREATE INDEX gpu_samples_at ON gpu_samples USING brin (at) WITH (pages_per_range = 32);
CREATE INDEX gpu_samples_host_at ON gpu_samples (host_id, at);

COMMENT ON TABLE gpu_samples IS 'Raw monitor samples: one row per GPU per sample (monitor_store), range-partitioned by at (gpu_samples_partitions). Rolled up into gpu_samples_5m and gpu_samples_1h; old partitions dropped by gpu_samples_prune.';
COMMENT ON COLUMN gpu_samples.at IS 'When the sample was taken (the document''s at).';
COMMENT ON COLUMN gpu_samples.host_id IS 'The host (no foreign key: see the migration).';
COMMENT ON COLUMN gpu_samples.clock_event_reasons IS 'clocks_event_reasons.active bit mask; NULL when not read.';
COMMENT ON COLUMN gpu_samples.ecc_uncorrected_volatile IS 'ecc.errors.uncorrected.volatile.total; NULL when not read.';
COMMENT ON COLUMN gpu_samples.mem_used_mib IS 'memory.used, MiB; NULL when not read.';
COMMENT ON COLUMN gpu_samples.mem_total_mib IS 'memory.total, MiB; NULL when not read.';
COMMENT ON COLUMN gpu_samples.power_w IS 'power.draw, watts; NULL when not read.';
COMMENT ON COLUMN gpu_samples.util_gpu IS 'utilization.gpu, percent; NULL when not read.';
COMMENT ON COLUMN gpu_samples.util_mem IS 'utilization.memory, percent; NULL when not read.';
COMMENT ON COLUMN gpu_samples.temp_c IS 'temperature.gpu, degrees Celsius; NULL when not read.';
COMMENT ON COLUMN gpu_samples.retired_pages_pending IS 'retired_pages.pending; NULL when not read.';
COMMENT ON COLUMN gpu_samples.remapped_rows_pending IS 'remapped_rows.pending; NULL when not read.';
COMMENT ON COLUMN gpu_samples.remapped_rows_failure IS 'remapped_rows.failure; NULL when not read.';
COMMENT ON COLUMN gpu_samples.gpu_uuid IS 'The GPU (gpus.uuid; no foreign key, as for host_id).';
COMMENT ON INDEX gpu_samples_at IS 'Time ranges within a partition: the rollups (rows arrive in time order).';
COMMENT ON INDEX gpu_samples_host_at IS 'One host''s samples over a time range (GET /v1/hosts/{id}/samples?step=raw).';

CREATE TABLE gpu_samples_retention (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    width     interval NOT NULL DEFAULT '1 day' CHECK (width IN ('1 hour', '1 day')),
    kept_from timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO gpu_samples_retention DEFAULT VALUES;
COMMENT ON TABLE gpu_samples_retention IS 'How gpu_samples is partitioned and how far back it is kept (one row).';
COMMENT ON COLUMN gpu_samples_retention.singleton IS 'Always true: the table has one row.';
COMMENT ON COLUMN gpu_samples_retention.width IS 'Width of a partition of gpu_samples: 1 day (1 hour for small test fleets). Change it only before the first sample: partitions of both widths would overlap.';
COMMENT ON COLUMN gpu_samples_retention.kept_from IS 'Raw samples before this time are gone (their partitions dropped): monitor_store refuses a sample older than it, whose buckets could no longer be rolled up whole.';

CREATE TABLE gpu_samples_partitions (
    name  text PRIMARY KEY CHECK (name ~ '^gpu_samples_p[0-9]{8}_[0-9]{2}$'),
    lower timestamptz NOT NULL UNIQUE,
    upper timestamptz NOT NULL CHECK (upper > lower)
);
COMMENT ON TABLE gpu_samples_partitions IS 'The partitions of gpu_samples (made by gpu_samples_partition, dropped by gpu_samples_prune).';
COMMENT ON COLUMN gpu_samples_partitions.name IS 'The partition: gpu_samples_pYYYYMMDD_HH of its lower bound in UTC.';
COMMENT ON COLUMN gpu_samples_partitions.lower IS 'Its first time (inclusive).';
COMMENT ON COLUMN gpu_samples_partitions.upper IS 'Its end (exclusive).';

-- The partition of gpu_samples that holds p_at, made if missing (by the housekeeping ahead
-- of time, by monitor_store when it was not). Returns its name.
CREATE FUNCTION gpu_samples_partition(p_at timestamptz) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    w interval;
    lo timestamptz;
    nm text;
BEGIN
    SELECT width INTO w FROM gpu_samples_retention;
    lo := date_bin(w, p_at, timestamptz '2000-01-01 00:00Z');
    nm := 'gpu_samples_p' || to_char(lo AT TIME ZONE 'UTC', 'YYYYMMDD_HH24');
    IF to_regclass(nm) IS NOT NULL THEN
        RETURN nm;
    END IF;
    BEGIN
        EXECUTE format('CREATE TABLE %I PARTITION OF gpu_samples FOR VALUES FROM (%L) TO (%L)'
                       ' WITH (fillfactor = 100, autovacuum_vacuum_insert_scale_factor = 0.05)',
                       nm, lo, lo + w);
        EXECUTE format('COMMENT ON TABLE %I IS %L', nm,
                       format('gpu_samples from %s to %s (UTC).', lo AT TIME ZONE 'UTC',
                              (lo + w) AT TIME ZONE 'UTC'));
        INSERT INTO gpu_samples_partitions (name, lower, upper) VALUES (nm, lo, lo + w);
    EXCEPTION WHEN duplicate_table OR unique_violation THEN
        NULL; -- another session made it first
    END;
    RETURN nm;
END $$;
COMMENT ON FUNCTION gpu_samples_partition(timestamptz) IS 'The partition of gpu_samples holding a time, made when missing (with its row in gpu_samples_partitions); returns its name.';

-- Rollups: one row per GPU and bucket (date_bin from 2000-01-01 UTC). Each metric's
-- minimum, mean and maximum over the bucket's non-NULL readings (NULL when there was
-- none); counters keep their maximum, flags whether any reading was true.
CREATE TABLE gpu_samples_5m (
    bucket                       timestamptz NOT NULL,
    host_id                      uuid NOT NULL,
    gpu_uuid                     text NOT NULL,
    samples                      integer NOT NULL CHECK (samples >= 1),
    util_gpu_min                 smallint,
    util_gpu_avg                 double precision,
    util_gpu_max                 smallint,
    util_mem_min                 smallint,
    util_mem_avg                 double precision,
    util_mem_max                 smallint,
    mem_used_mib_min             integer,
    mem_used_mib_avg             double precision,
    mem_used_mib_max             integer,
    mem_total_mib_max            integer,
    temp_c_min                   smallint,
    temp_c_avg                   double precision,
    temp_c_max                   smallint,
    power_w_min                  real,
    power_w_avg                  double precision,
    power_w_max                  real,
    clock_event_reasons_any      bigint,
    ecc_uncorrected_volatile_max bigint,
    retired_pages_pending_any    boolean,
    remapped_rows_pending_any    boolean,
    remapped_rows_failure_any    boolean,
    PRIMARY KEY (host_id, bucket, gpu_uuid)
);
CREATE INDEX gpu_samples_5m_bucket ON gpu_samples_5m USING brin (bucket);
CREATE TABLE gpu_samples_1h (LIKE gpu_samples_5m INCLUDING CONSTRAINTS);
ALTER TABLE gpu_samples_1h ADD PRIMARY KEY (host_id, bucket, gpu_uuid);
CREATE INDEX gpu_samples_1h_bucket ON gpu_samples_1h USING brin (bucket);

COMMENT ON TABLE gpu_samples_5m IS 'gpu_samples summed per GPU and 5-minute bucket by gpu_samples_rollup (GET /v1/hosts/{id}/samples?step=5m).';
COMMENT ON TABLE gpu_samples_1h IS 'gpu_samples summed per GPU and 1-hour bucket by gpu_samples_rollup (GET /v1/hosts/{id}/samples?step=1h).';
COMMENT ON INDEX gpu_samples_5m_bucket IS 'Retention by bucket.';
COMMENT ON INDEX gpu_samples_1h_bucket IS 'Retention by bucket.';
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['gpu_samples_5m', 'gpu_samples_1h'] LOOP
        EXECUTE format($c$
COMMENT ON COLUMN %1$I.bucket IS 'Start of the bucket (date_bin from 2000-01-01 00:00 UTC).';
COMMENT ON COLUMN %1$I.host_id IS 'The host (no foreign key, as in gpu_samples).';
COMMENT ON COLUMN %1$I.gpu_uuid IS 'The GPU.';
COMMENT ON COLUMN %1$I.samples IS 'Raw samples in the bucket.';
COMMENT ON COLUMN %1$I.util_gpu_min IS 'Lowest utilization.gpu, percent (NULL: never read in the bucket).';
COMMENT ON COLUMN %1$I.util_gpu_avg IS 'Mean utilization.gpu over the readings, percent.';
COMMENT ON COLUMN %1$I.util_gpu_max IS 'Highest utilization.gpu, percent.';
COMMENT ON COLUMN %1$I.util_mem_min IS 'Lowest utilization.memory, percent.';
COMMENT ON COLUMN %1$I.util_mem_avg IS 'Mean utilization.memory, percent.';
COMMENT ON COLUMN %1$I.util_mem_max IS 'Highest utilization.memory, percent.';
COMMENT ON COLUMN %1$I.mem_used_mib_min IS 'Lowest memory.used, MiB.';
COMMENT ON COLUMN %1$I.mem_used_mib_avg IS 'Mean memory.used, MiB.';
COMMENT ON COLUMN %1$I.mem_used_mib_max IS 'Highest memory.used, MiB.';
COMMENT ON COLUMN %1$I.mem_total_mib_max IS 'Highest memory.total, MiB.';
COMMENT ON COLUMN %1$I.temp_c_min IS 'Lowest temperature.gpu, degrees Celsius.';
COMMENT ON COLUMN %1$I.temp_c_avg IS 'Mean temperature.gpu, degrees Celsius.';
COMMENT ON COLUMN %1$I.temp_c_max IS 'Highest temperature.gpu, degrees Celsius.';
COMMENT ON COLUMN %1$I.power_w_min IS 'Lowest power.draw, watts.';
COMMENT ON COLUMN %1$I.power_w_avg IS 'Mean power.draw, watts.';
COMMENT ON COLUMN %1$I.power_w_max IS 'Highest power.draw, watts.';
COMMENT ON COLUMN %1$I.clock_event_reasons_any IS 'Bitwise OR of the clock event reason masks: every reason seen in the bucket.';
COMMENT ON COLUMN %1$I.ecc_uncorrected_volatile_max IS 'Highest uncorrected volatile ECC counter.';
COMMENT ON COLUMN %1$I.retired_pages_pending_any IS 'Whether any reading had retired pages pending.';
COMMENT ON COLUMN %1$I.remapped_rows_pending_any IS 'Whether any reading had remapped rows pending.';
COMMENT ON COLUMN %1$I.remapped_rows_failure_any IS 'Whether any reading had a row-remapping failure.';
$c$, t);
    END LOOP;
END $$;

-- The rollups' watermarks. done_upto starts at infinity (nothing to do); a stored sample
-- older than a watermark moves it back to its bucket (monitor_store), so the first
-- samples, and late ones, are rolled up (again) by the next call.
CREATE TABLE gpu_samples_rollup_state (
    grain       text PRIMARY KEY CHECK (grain IN ('5m', '1h')),
    width       interval NOT NULL CHECK (width IN ('5 minutes', '1 hour')),
    max_buckets integer NOT NULL CHECK (max_buckets BETWEEN 1 AND 1000),
    done_upto   timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO gpu_samples_rollup_state (grain, width, max_buckets, done_upto)
VALUES ('5m', '5 minutes', 36, 'infinity'), ('1h', '1 hour', 3, 'infinity');

COMMENT ON TABLE gpu_samples_rollup_state IS 'Watermark of each rollup grain (gpu_samples_rollup).';
COMMENT ON COLUMN gpu_samples_rollup_state.grain IS '5m (gpu_samples_5m) or 1h (gpu_samples_1h).';
COMMENT ON COLUMN gpu_samples_rollup_state.width IS 'The bucket width.';
COMMENT ON COLUMN gpu_samples_rollup_state.max_buckets IS 'At most this many buckets are rolled up per call (a bound on one call''s work; the result says when it is behind).';
COMMENT ON COLUMN gpu_samples_rollup_state.done_upto IS 'Every bucket before this time is rolled up; infinity until the first sample.';
COMMENT ON COLUMN gpu_samples_rollup_state.updated_at IS 'When the row last changed.';

CREATE TABLE gpu_events (
    id         bigserial PRIMARY KEY,
    host_id    uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
    gpu_uuid   text CHECK (gpu_uuid ~ '^GPU-[0-9A-Fa-f-]{4,75}$'),
    pci_bus_id text CHECK (pci_bus_id ~ '^[0-9A-F]{8}:[0-9A-F]{2}:[01][0-9A-F]\.[0-7]$'),
    kind       text NOT NULL CHECK (kind IN ('xid', 'sxid', 'fell_off_bus', 'ecc', 'remap', 'fabric',
                                             'thermal', 'gpu_missing', 'container_runtime',
                                             'unreachable')),
    code       integer CHECK (code BETWEEN 0 AND 65535),
    category   text CHECK (category ~ '^[a-z][a-z_]{0,31}$'),
    policy     text NOT NULL CHECK (policy IN ('isolate', 'record')),
    raw        text NOT NULL DEFAULT '' CHECK (length(raw) <= 2048),
    message    text NOT NULL DEFAULT '' CHECK (length(message) <= 1024),
    first_seen timestamptz NOT NULL,
    last_seen  timestamptz NOT NULL,
    count      integer NOT NULL DEFAULT 1 CHECK (count >= 1),
    closed_at  timestamptz,
    CHECK (first_seen <= last_seen)
);
-- De-duplication: one open event per host, GPU, kind and code (NULLs equal).
CREATE UNIQUE INDEX gpu_events_open ON gpu_events (host_id, gpu_uuid, kind, code) NULLS NOT DISTINCT
    WHERE closed_at IS NULL;
CREATE INDEX gpu_events_gpu ON gpu_events (gpu_uuid, id) WHERE gpu_uuid IS NOT NULL;
CREATE INDEX gpu_events_host ON gpu_events (host_id, id);

COMMENT ON TABLE gpu_events IS 'GPU and host health events: Xid/SXid kernel-log lines, fallen off the bus, ECC, row remapping, fabric, thermal, a missing GPU, the container runtime, unreachable. The same host, GPU, kind and code while open is one row whose count and last_seen grow.';
COMMENT ON COLUMN gpu_events.id IS 'Order of first occurrence; the keyset for pagination (newest first).';
COMMENT ON COLUMN gpu_events.host_id IS 'The host.';
COMMENT ON COLUMN gpu_events.gpu_uuid IS 'The GPU, when known (an Xid line names a PCI address: monitor_store finds its GPU among the host''s).';
COMMENT ON COLUMN gpu_events.pci_bus_id IS 'PCI address of the GPU (or NVSwitch) in the canonical form, when known.';
COMMENT ON COLUMN gpu_events.kind IS 'xid, sxid, fell_off_bus, ecc (uncorrectable errors grew), remap (row remapping failed), fabric (state not Completed/Success), thermal, gpu_missing, container_runtime, unreachable.';
COMMENT ON COLUMN gpu_events.code IS 'The Xid or SXid number; NULL for kinds without one.';
COMMENT ON COLUMN gpu_events.category IS 'Category from the Xid catalog (data/xid_catalog.csv: application, driver, hardware, memory, nvlink, thermal_power, other), or the kind''s own.';
COMMENT ON COLUMN gpu_events.policy IS 'isolate: the event takes the host out of service; record: kept as evidence only. Once isolate, a repeat never lowers it.';
COMMENT ON COLUMN gpu_events.raw IS 'The kernel-log line(s) or reading that raised it, as first seen (at most 2048 characters; longer ones are cut).';
COMMENT ON COLUMN gpu_events.message IS 'A human summary, as first seen (at most 1024 characters).';
COMMENT ON COLUMN gpu_events.first_seen IS 'Time of the first sample that reported it.';
COMMENT ON COLUMN gpu_events.last_seen IS 'Time of the latest sample that reported it.';
COMMENT ON COLUMN gpu_events.count IS 'How many times it was reported while open.';
COMMENT ON COLUMN gpu_events.closed_at IS 'When it was closed (the GPU came back for gpu_missing; the host returned to service); NULL while open. A closed event is history: the next occurrence opens a new row.';
COMMENT ON INDEX gpu_events_open IS 'De-duplication of open events (monitor_store''s INSERT … ON CONFLICT) and a host''s open events.';
COMMENT ON INDEX gpu_events_gpu IS 'A GPU''s events, newest first (GET /v1/gpus/{uuid}/events).';
COMMENT ON INDEX gpu_events_host IS 'A host''s events, newest first.';

CREATE TABLE host_monitor (
    host_id        uuid PRIMARY KEY REFERENCES hosts (id) ON DELETE CASCADE,
    last_sample_at timestamptz,
    kmsg_cursor    text CHECK (length(kmsg_cursor) BETWEEN 1 AND 256),
    kmsg_mono      double precision CHECK (kmsg_mono >= 0),
    missed         integer NOT NULL DEFAULT 0 CHECK (missed >= 0),
    state          text NOT NULL DEFAULT 'unknown' CHECK (state ~ '^[a-z][a-z_]{0,31}$'),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE host_monitor IS 'The health monitor''s cursor and status per host (one row once the host was sampled or missed).';
COMMENT ON COLUMN host_monitor.host_id IS 'The host.';
COMMENT ON COLUMN host_monitor.last_sample_at IS 'Time of the newest stored sample.';
COMMENT ON COLUMN host_monitor.kmsg_cursor IS 'journalctl --show-cursor position after the last kernel-log read (the next read is --after-cursor); NULL when journald is not used.';
COMMENT ON COLUMN host_monitor.kmsg_mono IS 'Largest dmesg monotonic time read, seconds since boot (the next dmesg read starts after it) when journald is absent; NULL otherwise.';
COMMENT ON COLUMN host_monitor.missed IS 'Consecutive samples missed since the last stored one (the monitor counts them; monitor_store resets it).';
COMMENT ON COLUMN host_monitor.state IS 'The monitor''s view of the host: unknown (never sampled), ok (monitor_store stored a sample), or another word the monitor sets.';
COMMENT ON COLUMN host_monitor.updated_at IS 'Last change of the row.';

-- ---- monitor_store: validation helpers (SQLSTATE 22023 with the member's path) ----

CREATE FUNCTION monitor_bad(p_where text, p_what text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'monitor_store: % %', p_where, p_what USING ERRCODE = '22023';
END $$;
COMMENT ON FUNCTION monitor_bad(text, text) IS 'Raises monitor_store''s "bad document" error (SQLSTATE 22023) naming the member.';

-- Refuses an object with a member outside p_known.
CREATE FUNCTION monitor_keys(p_obj jsonb, p_known text[], p_where text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    k text;
BEGIN
    IF jsonb_typeof(p_obj) IS DISTINCT FROM 'object' THEN
        PERFORM monitor_bad(p_where, 'must be an object');
    END IF;
    SELECT x INTO k FROM jsonb_object_keys(p_obj) x WHERE x <> ALL (p_known) LIMIT 1;
    IF k IS NOT NULL THEN
        PERFORM monitor_bad(p_where, format('has an unknown member %s', left(to_jsonb(k)::text, 64)));
    END IF;
END $$;
COMMENT ON FUNCTION monitor_keys(jsonb, text[], text) IS 'monitor_store: refuses a non-object or an unknown member.';

-- A number member (NULL when absent or null), checked against [p_lo, p_hi] and, with
-- p_integer, for a whole value.
CREATE FUNCTION monitor_num(p_obj jsonb, p_key text, p_lo numeric, p_hi numeric,
                            p_integer boolean, p_where text) RETURNS numeric
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    v jsonb := p_obj -> p_key;
    n numeric;
BEGIN
    IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(v) <> 'number' THEN
        PERFORM monitor_bad(concat_ws('.', p_where, p_key), format('must be a number or null, not %s', jsonb_typeof(v)));
    END IF;
    n := v::numeric;
    IF (p_integer AND n <> trunc(n)) OR n < p_lo OR n > p_hi THEN
        PERFORM monitor_bad(concat_ws('.', p_where, p_key),
                            format('must be %s from %s to %s, not %s',
                                   CASE WHEN p_integer THEN 'an integer' ELSE 'a number' END,
                                   p_lo, p_hi, left(v::text, 32)));
    END IF;
    RETURN n;
END $$;
COMMENT ON FUNCTION monitor_num(jsonb, text, numeric, numeric, boolean, text) IS 'monitor_store: a number member within bounds, or NULL.';

-- A string member (NULL when absent or null) of at most p_max characters matching
-- p_pattern (when given); p_required refuses NULL.
CREATE FUNCTION monitor_str(p_obj jsonb, p_key text, p_max integer, p_pattern text,
                            p_required boolean, p_where text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    v jsonb := p_obj -> p_key;
    s text;
BEGIN
    IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
        IF p_required THEN
            PERFORM monitor_bad(concat_ws('.', p_where, p_key), 'is required');
        END IF;
        RETURN NULL;
    END IF;
    IF jsonb_typeof(v) <> 'string' THEN
        PERFORM monitor_bad(concat_ws('.', p_where, p_key), format('must be a string, not %s', jsonb_typeof(v)));
    END IF;
    s := v #>> '{}';
    IF length(s) > p_max OR (p_pattern IS NOT NULL AND s !~ p_pattern) THEN
        PERFORM monitor_bad(concat_ws('.', p_where, p_key),
                            format('is not valid: %s', left(v::text, 80)));
    END IF;
    RETURN s;
END $$;
COMMENT ON FUNCTION monitor_str(jsonb, text, integer, text, boolean, text) IS 'monitor_store: a bounded string member matching a pattern, or NULL.';

CREATE FUNCTION monitor_bool(p_obj jsonb, p_key text, p_where text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    v jsonb := p_obj -> p_key;
BEGIN
    IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(v) <> 'boolean' THEN
        PERFORM monitor_bad(concat_ws('.', p_where, p_key), format('must be true, false or null, not %s', jsonb_typeof(v)));
    END IF;
    RETURN v::boolean;
END $$;
COMMENT ON FUNCTION monitor_bool(jsonb, text, text) IS 'monitor_store: a boolean member, or NULL.';

-- The policy of an event monitor_store derives itself: off (the default: the monitor
-- sends its own), record or isolate.
CREATE FUNCTION monitor_derived_policy(p_doc jsonb, p_kind text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(p_doc #>> ARRAY['derived_policy', p_kind], 'off')
$$;
COMMENT ON FUNCTION monitor_derived_policy(jsonb, text) IS 'monitor_store: the policy of a derived event kind (the document''s derived_policy member; off by default).';

-- ---- monitor_store ----

-- Stores one sample of a host atomically (see the COMMENT below and README.md). Rows of
-- one host are serialized by its host_monitor row, locked first.
CREATE FUNCTION monitor_store(p_host uuid, p_doc jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    c_uuid CONSTANT text := '^GPU-[0-9A-Fa-f-]{4,75}$';
    c_pci CONSTANT text := '^[0-9A-F]{8}:[0-9A-F]{2}:[01][0-9A-F]\.[0-7]$';
    c_kinds CONSTANT text := '^(xid|sxid|fell_off_bus|ecc|remap|fabric|thermal|gpu_missing|container_runtime|unreachable)$';
    c_gpu_keys CONSTANT text[] := ARRAY['uuid', 'pci_bus_id', 'index', 'name', 'util_gpu', 'util_mem',
        'mem_used_mib', 'mem_total_mib', 'temp_c', 'power_w', 'clock_event_reasons',
        'ecc_uncorrected_volatile', 'retired_pages_pending', 'remapped_rows_pending',
        'remapped_rows_failure'];
    c_event_keys CONSTANT text[] := ARRAY['kind', 'code', 'category', 'policy', 'gpu_uuid',
        'pci_bus_id', 'raw', 'message'];
    v_gpus jsonb := p_doc -> 'gpus';
    v_events jsonb := p_doc -> 'events';
    v_at timestamptz;
    v_prev timestamptz;
    v_newest boolean;
    v_cursor text;
    v_mono double precision;
    v_old jsonb := '{}';
    v_derived jsonb := '[]';
    v_all jsonb;
    v_missing jsonb := '[]';
    v_returned text[] := '{}';
    v_result jsonb := '{}';
    a_uuid text[] := '{}';
    a_pci text[] := '{}';
    a_index integer[] := '{}';
    a_name text[] := '{}';
    a_util_gpu smallint[] := '{}';
    a_util_mem smallint[] := '{}';
    a_mem_used integer[] := '{}';
    a_mem_total integer[] := '{}';
    a_temp smallint[] := '{}';
    a_power real[] := '{}';
    a_clk bigint[] := '{}';
    a_ecc bigint[] := '{}';
    a_retired boolean[] := '{}';
    a_remap_pending boolean[] := '{}';
    a_remap_failure boolean[] := '{}';
    g jsonb;
    o jsonb;
    e jsonb;
    r record;
    w text;
    k text;
    n integer := 0;
    ndoc integer := 0;
    v_kind text;
    v_code integer;
    v_category text;
    v_policy text;
    v_guuid text;
    v_gpci text;
    v_raw text;
    v_message text;
    v_id bigint;
    v_count integer;
    v_new boolean;
BEGIN
    -- The document.
    IF p_host IS NULL THEN
        PERFORM monitor_bad('host', 'is required');
    END IF;
    PERFORM monitor_keys(p_doc, ARRAY['at', 'gpus', 'events', 'kmsg_cursor', 'kmsg_mono',
                                      'kmsg_note', 'kmsg_dropped', 'container_runtime',
                                      'derived_policy'], 'the document');
    IF jsonb_typeof(p_doc -> 'at') IS DISTINCT FROM 'string'
       OR (p_doc ->> 'at') !~ '^\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d{1,9})?([Zz]|[+-]\d\d(:?\d\d)?)$' THEN
        PERFORM monitor_bad('at', 'must be an RFC 3339 time string');
    END IF;
    BEGIN
        v_at := (p_doc ->> 'at')::timestamptz;
    EXCEPTION WHEN datetime_field_overflow OR invalid_datetime_format THEN
        PERFORM monitor_bad('at', format('is not a valid time: %s', left(p_doc ->> 'at', 40)));
    END;
    IF v_at > now() + interval '10 minutes' OR v_at < now() - interval '30 days' THEN
        PERFORM monitor_bad('at', 'must be within the last 30 days and at most 10 minutes ahead');
    END IF;
    IF v_at < (SELECT kept_from FROM gpu_samples_retention) THEN
        PERFORM monitor_bad('at', 'is older than the retained samples');
    END IF;
    v_cursor := monitor_str(p_doc, 'kmsg_cursor', 256, '^[a-z]=[0-9a-f]+(;[a-z]=[0-9a-f]+)*$', false, NULL);
    v_mono := monitor_num(p_doc, 'kmsg_mono', 0, 1e12, false, NULL);
    PERFORM monitor_str(p_doc, 'kmsg_note', 256, NULL, false, NULL);
    PERFORM monitor_num(p_doc, 'kmsg_dropped', 0, 1e9, true, NULL);
    PERFORM monitor_bool(p_doc, 'container_runtime', NULL);
    IF p_doc ? 'derived_policy' THEN
        PERFORM monitor_keys(p_doc -> 'derived_policy', ARRAY['gpu_missing', 'ecc', 'remap'], 'derived_policy');
        FOREACH k IN ARRAY ARRAY['gpu_missing', 'ecc', 'remap'] LOOP
            PERFORM monitor_str(p_doc -> 'derived_policy', k, 8, '^(isolate|record|off)$', false, 'derived_policy');
        END LOOP;
    END IF;
    IF v_gpus IS NOT NULL AND jsonb_typeof(v_gpus) NOT IN ('array', 'null') THEN
        PERFORM monitor_bad('gpus', 'must be an array or null');
    END IF;
    IF jsonb_typeof(v_gpus) = 'array' AND jsonb_array_length(v_gpus) > 64 THEN
        PERFORM monitor_bad('gpus', 'holds more than 64 GPUs');
    END IF;
    IF v_events IS NOT NULL AND jsonb_typeof(v_events) NOT IN ('array', 'null') THEN
        PERFORM monitor_bad('events', 'must be an array or null');
    END IF;
    IF jsonb_typeof(v_events) = 'array' THEN
        ndoc := jsonb_array_length(v_events);
        IF ndoc > 256 THEN
            PERFORM monitor_bad('events', 'holds more than 256 events');
        END IF;
    END IF;

    -- The host, and its monitor row (locked: one sample of a host at a time).
    PERFORM 1 FROM hosts WHERE id = p_host;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'monitor_store: no host %', p_host USING ERRCODE = '23503';
    END IF;
    SELECT last_sample_at INTO v_prev FROM host_monitor WHERE host_id = p_host FOR UPDATE;
    v_newest := v_prev IS NULL OR v_at >= v_prev;
    INSERT INTO host_monitor AS m (host_id, last_sample_at, kmsg_cursor, kmsg_mono, missed, state)
    VALUES (p_host, v_at, v_cursor, v_mono, 0, 'ok')
    ON CONFLICT (host_id) DO UPDATE SET
        last_sample_at = greatest(m.last_sample_at, EXCLUDED.last_sample_at),
        kmsg_cursor = CASE WHEN v_newest THEN coalesce(EXCLUDED.kmsg_cursor, m.kmsg_cursor)
                           ELSE m.kmsg_cursor END,
        kmsg_mono = CASE WHEN v_newest THEN coalesce(EXCLUDED.kmsg_mono, m.kmsg_mono)
                         ELSE m.kmsg_mono END,
        missed = 0, state = 'ok', updated_at = now();

    -- GPUs: validated into one array per column, then one statement per table.
    IF jsonb_typeof(v_gpus) = 'array' THEN
        n := jsonb_array_length(v_gpus);
        SELECT coalesce(jsonb_object_agg(uuid, jsonb_build_object(
                   'ecc', ecc_uncorrected_volatile, 'failure', remapped_rows_failure,
                   'missing', missing_since IS NOT NULL)), '{}')
          INTO v_old FROM gpus WHERE host_id = p_host;
        FOR i IN 1 .. n LOOP
            g := v_gpus -> (i - 1);
            w := format('gpus[%s]', i - 1);
            PERFORM monitor_keys(g, c_gpu_keys, w);
            a_uuid[i] := monitor_str(g, 'uuid', 79, c_uuid, true, w);
            IF a_uuid[i] = ANY (a_uuid[1:i - 1]) THEN
                PERFORM monitor_bad(w || '.uuid', 'repeats an earlier GPU');
            END IF;
            a_pci[i] := monitor_str(g, 'pci_bus_id', 16, c_pci, false, w);
            IF a_pci[i] = ANY (a_pci[1:i - 1]) THEN
                PERFORM monitor_bad(w || '.pci_bus_id', 'repeats an earlier GPU');
            END IF;
            a_index[i] := monitor_num(g, 'index', 0, 1023, true, w);
            a_name[i] := monitor_str(g, 'name', 128, '^[^[:cntrl:]]+$', false, w);
            a_util_gpu[i] := monitor_num(g, 'util_gpu', 0, 100, true, w);
            a_util_mem[i] := monitor_num(g, 'util_mem', 0, 100, true, w);
            a_mem_used[i] := monitor_num(g, 'mem_used_mib', 0, 2147483647, true, w);
            a_mem_total[i] := monitor_num(g, 'mem_total_mib', 0, 2147483647, true, w);
            a_temp[i] := monitor_num(g, 'temp_c', -100, 250, true, w);
            a_power[i] := monitor_num(g, 'power_w', 0, 100000, false, w);
            a_clk[i] := monitor_num(g, 'clock_event_reasons', 0, 9223372036854775807, true, w);
            a_ecc[i] := monitor_num(g, 'ecc_uncorrected_volatile', 0, 9223372036854775807, true, w);
            a_retired[i] := monitor_bool(g, 'retired_pages_pending', w);
            a_remap_pending[i] := monitor_bool(g, 'remapped_rows_pending', w);
            a_remap_failure[i] := monitor_bool(g, 'remapped_rows_failure', w);
            -- Changes against the GPU's previous readings (on this host) derive events.
            o := v_old -> a_uuid[i];
            IF v_newest THEN
                IF (o ->> 'ecc')::bigint < a_ecc[i] AND monitor_derived_policy(p_doc, 'ecc') <> 'off' THEN
                    v_derived := v_derived || jsonb_build_object('kind', 'ecc', 'category', 'memory',
                        'policy', monitor_derived_policy(p_doc, 'ecc'), 'gpu_uuid', a_uuid[i],
                        'raw', format('ecc.errors.uncorrected.volatile.total %s -> %s', o ->> 'ecc', a_ecc[i]),
                        'message', format('uncorrectable ECC errors grew from %s to %s', o ->> 'ecc', a_ecc[i]));
                END IF;
                IF a_remap_failure[i] AND NOT coalesce((o ->> 'failure')::boolean, false)
                   AND monitor_derived_policy(p_doc, 'remap') <> 'off' THEN
                    v_derived := v_derived || jsonb_build_object('kind', 'remap', 'category', 'memory',
                        'policy', monitor_derived_policy(p_doc, 'remap'), 'gpu_uuid', a_uuid[i],
                        'raw', 'remapped_rows.failure Yes',
                        'message', 'row remapping failed: the GPU needs service');
                END IF;
                IF (o ->> 'missing')::boolean THEN
                    v_returned := v_returned || a_uuid[i];
                END IF;
            END IF;
        END LOOP;
        PERFORM gpu_samples_partition(v_at);
        IF v_at < (SELECT max(done_upto) FROM gpu_samples_rollup_state) THEN
            UPDATE gpu_samples_rollup_state
               SET done_upto = date_bin(width, v_at, timestamptz '2000-01-01 00:00Z'), updated_at = now()
             WHERE done_upto > v_at;
        END IF;
        INSERT INTO gpu_samples (at, host_id, clock_event_reasons, ecc_uncorrected_volatile,
                                 mem_used_mib, mem_total_mib, power_w, util_gpu, util_mem, temp_c,
                                 retired_pages_pending, remapped_rows_pending, remapped_rows_failure,
                                 gpu_uuid)
        SELECT v_at, p_host, u.*
          FROM unnest(a_clk, a_ecc, a_mem_used, a_mem_total, a_power, a_util_gpu, a_util_mem,
                      a_temp, a_retired, a_remap_pending, a_remap_failure, a_uuid) u;
        INSERT INTO gpus AS x (uuid, host_id, pci_bus_id, index, name, first_seen, last_seen,
                               util_gpu, util_mem, mem_used_mib, mem_total_mib, temp_c, power_w,
                               clock_event_reasons, ecc_uncorrected_volatile, retired_pages_pending,
                               remapped_rows_pending, remapped_rows_failure, missing_since)
        SELECT u.uuid, p_host, u.pci, u.idx, u.name, v_at, v_at, u.util_gpu, u.util_mem,
               u.mem_used, u.mem_total, u.temp, u.power, u.clk, u.ecc, u.retired, u.remap_pending,
               u.remap_failure, NULL
          FROM unnest(a_uuid, a_pci, a_index, a_name, a_util_gpu, a_util_mem, a_mem_used,
                      a_mem_total, a_temp, a_power, a_clk, a_ecc, a_retired, a_remap_pending,
                      a_remap_failure)
               AS u(uuid, pci, idx, name, util_gpu, util_mem, mem_used, mem_total, temp, power, clk,
                    ecc, retired, remap_pending, remap_failure)
        ON CONFLICT (uuid) DO UPDATE SET
            host_id = EXCLUDED.host_id,
            pci_bus_id = coalesce(EXCLUDED.pci_bus_id, x.pci_bus_id),
            index = coalesce(EXCLUDED.index, x.index),
            name = coalesce(EXCLUDED.name, x.name),
            last_seen = EXCLUDED.last_seen,
            util_gpu = EXCLUDED.util_gpu,
            util_mem = EXCLUDED.util_mem,
            mem_used_mib = EXCLUDED.mem_used_mib,
            mem_total_mib = EXCLUDED.mem_total_mib,
            temp_c = EXCLUDED.temp_c,
            power_w = EXCLUDED.power_w,
            clock_event_reasons = EXCLUDED.clock_event_reasons,
            ecc_uncorrected_volatile = EXCLUDED.ecc_uncorrected_volatile,
            retired_pages_pending = EXCLUDED.retired_pages_pending,
            remapped_rows_pending = EXCLUDED.remapped_rows_pending,
            remapped_rows_failure = EXCLUDED.remapped_rows_failure,
            missing_since = CASE WHEN v_newest THEN NULL ELSE x.missing_since END
        WHERE x.last_seen <= EXCLUDED.last_seen;
        -- The host's GPUs this sample did not list are missing (from the newest sample
        -- only, and one that listed GPUs: an empty list is an inventory not read).
        IF v_newest AND n > 0 THEN
            FOR r IN UPDATE gpus SET missing_since = v_at
                      WHERE host_id = p_host AND missing_since IS NULL AND uuid <> ALL (a_uuid)
                  RETURNING uuid, pci_bus_id, index
            LOOP
                v_missing := v_missing || to_jsonb(r.uuid);
                IF monitor_derived_policy(p_doc, 'gpu_missing') <> 'off' THEN
                    v_derived := v_derived || jsonb_build_object('kind', 'gpu_missing',
                        'category', 'hardware', 'policy', monitor_derived_policy(p_doc, 'gpu_missing'),
                        'gpu_uuid', r.uuid, 'pci_bus_id', r.pci_bus_id,
                        'message', format('GPU %s (PCI %s, index %s) is absent from the sample',
                                          r.uuid, coalesce(r.pci_bus_id, 'unknown'),
                                          coalesce(r.index::text, 'unknown')));
                END IF;
            END LOOP;
            IF cardinality(v_returned) > 0 THEN
                UPDATE gpu_events SET closed_at = v_at
                 WHERE host_id = p_host AND kind = 'gpu_missing' AND closed_at IS NULL
                   AND gpu_uuid = ANY (v_returned);
            END IF;
        END IF;
    END IF;

    -- Events: the document's, then the derived ones; an open one of the same host, GPU,
    -- kind and code is counted instead of inserted again.
    v_all := CASE WHEN ndoc > 0 THEN v_events ELSE '[]' END || v_derived;
    FOR i IN 0 .. jsonb_array_length(v_all) - 1 LOOP
        e := v_all -> i;
        w := CASE WHEN i < ndoc THEN format('events[%s]', i) ELSE 'a derived event' END;
        PERFORM monitor_keys(e, c_event_keys, w);
        v_kind := monitor_str(e, 'kind', 32, c_kinds, true, w);
        v_code := monitor_num(e, 'code', 0, 65535, true, w);
        v_category := monitor_str(e, 'category', 32, '^[a-z][a-z_]{0,31}$', false, w);
        v_policy := monitor_str(e, 'policy', 8, '^(isolate|record)$', true, w);
        v_guuid := monitor_str(e, 'gpu_uuid', 79, c_uuid, false, w);
        v_gpci := monitor_str(e, 'pci_bus_id', 16, c_pci, false, w);
        v_raw := left(monitor_str(e, 'raw', 65536, NULL, false, w), 2048);
        v_message := left(monitor_str(e, 'message', 65536, NULL, false, w), 1024);
        IF v_guuid IS NULL AND v_gpci IS NOT NULL THEN
            SELECT uuid INTO v_guuid FROM gpus WHERE host_id = p_host AND pci_bus_id = v_gpci
             ORDER BY last_seen DESC LIMIT 1;
        ELSIF v_guuid IS NOT NULL AND v_gpci IS NULL THEN
            SELECT pci_bus_id INTO v_gpci FROM gpus WHERE uuid = v_guuid;
        END IF;
        INSERT INTO gpu_events AS x (host_id, gpu_uuid, pci_bus_id, kind, code, category, policy,
                                     raw, message, first_seen, last_seen)
        VALUES (p_host, v_guuid, v_gpci, v_kind, v_code, v_category, v_policy,
                coalesce(v_raw, ''), coalesce(v_message, ''), v_at, v_at)
        ON CONFLICT (host_id, gpu_uuid, kind, code) WHERE closed_at IS NULL DO UPDATE SET
            count = x.count + 1,
            first_seen = least(x.first_seen, EXCLUDED.first_seen),
            last_seen = greatest(x.last_seen, EXCLUDED.last_seen),
            policy = CASE WHEN 'isolate' IN (x.policy, EXCLUDED.policy) THEN 'isolate' ELSE 'record' END,
            category = coalesce(x.category, EXCLUDED.category),
            pci_bus_id = coalesce(x.pci_bus_id, EXCLUDED.pci_bus_id)
        RETURNING x.id, x.count, x.policy, x.xmax = 0 INTO v_id, v_count, v_policy, v_new;
        v_result := v_result || jsonb_build_object(v_id::text, jsonb_build_object(
            'id', v_id, 'kind', v_kind, 'code', v_code, 'gpu_uuid', v_guuid, 'policy', v_policy,
            'count', v_count,
            'new', v_new OR coalesce((v_result #>> ARRAY[v_id::text, 'new'])::boolean, false)));
    END LOOP;

    RETURN jsonb_build_object(
        'events', coalesce((SELECT jsonb_agg(value ORDER BY (value ->> 'id')::bigint)
                              FROM jsonb_each(v_result)), '[]'),
        'missing_gpus', v_missing,
        'returned_gpus', to_jsonb(v_returned),
        'samples', n,
        'newest', v_newest);
END $$;
COMMENT ON FUNCTION monitor_store(uuid, jsonb) IS 'Stores one monitor sample of a host atomically: {"at", "gpus": [...], "events": [...], "kmsg_cursor", "kmsg_mono", "kmsg_note", "kmsg_dropped", "container_runtime", "derived_policy"}. Inserts the GPU rows into gpu_samples, upserts gpus (the host''s GPUs absent from a non-empty list get missing_since), upserts and de-duplicates gpu_events (plus, when derived_policy asks, the events it derives: gpu_missing, ecc growth, remap failure), updates host_monitor. Returns {"events": [{"id", "kind", "code", "gpu_uuid", "policy", "count", "new"}], "missing_gpus", "returned_gpus", "samples", "newest"}. A bad document raises SQLSTATE 22023 naming the member; an unknown host 23503.';

CREATE FUNCTION monitor_close_events(p_host uuid, p_at timestamptz DEFAULT now()) RETURNS integer
LANGUAGE sql AS $$
    WITH c AS (UPDATE gpu_events SET closed_at = greatest(p_at, last_seen)
                WHERE host_id = p_host AND closed_at IS NULL RETURNING 1)
    SELECT count(*)::integer FROM c
$$;
COMMENT ON FUNCTION monitor_close_events(uuid, timestamptz) IS 'Closes every open event of a host (it returned to service); returns how many.';

-- ---- rollups and retention ----

-- The rollup rows of [p_from, p_to) for buckets of p_width, computed from gpu_samples.
CREATE FUNCTION gpu_samples_aggregate(p_width interval, p_from timestamptz, p_to timestamptz)
RETURNS SETOF gpu_samples_5m LANGUAGE sql STABLE AS $$
    SELECT date_bin(p_width, at, timestamptz '2000-01-01 00:00Z'), host_id, gpu_uuid,
           count(*)::integer,
           min(util_gpu), avg(util_gpu)::float8, max(util_gpu),
           min(util_mem), avg(util_mem)::float8, max(util_mem),
           min(mem_used_mib), avg(mem_used_mib)::float8, max(mem_used_mib),
           max(mem_total_mib),
           min(temp_c), avg(temp_c)::float8, max(temp_c),
           min(power_w), avg(power_w), max(power_w),
           bit_or(clock_event_reasons), max(ecc_uncorrected_volatile),
           bool_or(retired_pages_pending), bool_or(remapped_rows_pending),
           bool_or(remapped_rows_failure)
      FROM gpu_samples WHERE at >= p_from AND at < p_to
     GROUP BY 1, 2, 3
$$;
COMMENT ON FUNCTION gpu_samples_aggregate(interval, timestamptz, timestamptz) IS 'Rollup rows of the raw samples in [from, to) for one bucket width (gpu_samples_rollup).';

-- Rolls up every complete bucket before p_upto that is not yet rolled up (at most
-- max_buckets per grain and call), recomputing each whole from the raw samples: calling
-- it again changes nothing, and a bucket that a late sample moved the watermark back to
-- is recomputed. Callers pass a time a little behind now (db/monitor.c: now - 2 min) so
-- that samples still in flight land in buckets not yet rolled up.
CREATE FUNCTION gpu_samples_rollup(p_upto timestamptz) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    st record;
    v_target timestamptz;
    v_end timestamptz;
    n bigint;
    v_out jsonb := '{}';
BEGIN
    IF p_upto IS NULL OR NOT isfinite(p_upto) THEN
        RAISE EXCEPTION 'gpu_samples_rollup: upto must be a finite time' USING ERRCODE = '22023';
    END IF;
    FOR st IN SELECT * FROM gpu_samples_rollup_state ORDER BY width FOR UPDATE LOOP
        v_target := date_bin(st.width, p_upto, timestamptz '2000-01-01 00:00Z');
        v_end := st.done_upto;
        n := 0;
        IF isfinite(st.done_upto) AND st.done_upto < v_target THEN
            v_end := least(v_target, st.done_upto + st.width * st.max_buckets);
            EXECUTE format('DELETE FROM %I WHERE bucket >= $1 AND bucket < $2', 'gpu_samples_' || st.grain)
              USING st.done_upto, v_end;
            EXECUTE format('INSERT INTO %I SELECT * FROM gpu_samples_aggregate($1, $2, $3)',
                           'gpu_samples_' || st.grain)
              USING st.width, st.done_upto, v_end;
            GET DIAGNOSTICS n = ROW_COUNT;
            UPDATE gpu_samples_rollup_state SET done_upto = v_end, updated_at = now()
             WHERE grain = st.grain;
        END IF;
        v_out := v_out || jsonb_build_object(st.grain, jsonb_build_object(
            'done_upto', CASE WHEN isfinite(v_end)
                THEN to_char(v_end AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') END,
            'rows', n,
            'behind', isfinite(v_end) AND v_end < v_target));
    END LOOP;
    RETURN v_out;
END $$;
COMMENT ON FUNCTION gpu_samples_rollup(timestamptz) IS 'Incremental, idempotent rollup of gpu_samples into gpu_samples_5m and gpu_samples_1h up to the last complete bucket before upto; returns per grain {"done_upto", "rows", "behind"} (behind: call again).';

-- Retention: drops at most one partition of raw samples per call, the oldest, once it is
-- wholly older than p_raw_keep and both rollups hold it; deletes at most p_batch rollup
-- rows per grain, oldest first (call again while "more" is true). Makes the partitions of
-- now and of the next period ahead of time.
CREATE FUNCTION gpu_samples_prune(p_raw_keep interval, p_m5_keep interval, p_h1_keep interval,
                                  p_batch integer DEFAULT 50000) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    v_before timestamptz;
    v_part record;
    v_dropped integer := 0;
    v_more boolean;
    n_5m bigint;
    n_1h bigint;
BEGIN
    IF p_raw_keep IS NULL OR p_m5_keep IS NULL OR p_h1_keep IS NULL
       OR least(p_raw_keep, p_m5_keep, p_h1_keep) < interval '1 hour' THEN
        RAISE EXCEPTION 'gpu_samples_prune: every retention must be at least 1 hour'
            USING ERRCODE = '22023';
    END IF;
    IF p_batch IS NULL OR p_batch NOT BETWEEN 1 AND 1000000 THEN
        RAISE EXCEPTION 'gpu_samples_prune: batch must be from 1 to 1000000' USING ERRCODE = '22023';
    END IF;
    PERFORM gpu_samples_partition(now());
    PERFORM gpu_samples_partition(now() + (SELECT width FROM gpu_samples_retention));
    SELECT least(now() - p_raw_keep, min(done_upto)) INTO v_before FROM gpu_samples_rollup_state;
    SELECT name, upper INTO v_part FROM gpu_samples_partitions WHERE upper <= v_before
     ORDER BY lower LIMIT 1;
    IF FOUND THEN
        UPDATE gpu_samples_retention SET kept_from = greatest(kept_from, v_part.upper);
        EXECUTE format('DROP TABLE %I', v_part.name);
        DELETE FROM gpu_samples_partitions WHERE name = v_part.name;
        v_dropped := 1;
    END IF;
    v_more := EXISTS (SELECT 1 FROM gpu_samples_partitions WHERE upper <= v_before);
    DELETE FROM gpu_samples_5m WHERE ctid = ANY (ARRAY(
        SELECT ctid FROM gpu_samples_5m WHERE bucket < now() - p_m5_keep LIMIT p_batch));
    GET DIAGNOSTICS n_5m = ROW_COUNT;
    DELETE FROM gpu_samples_1h WHERE ctid = ANY (ARRAY(
        SELECT ctid FROM gpu_samples_1h WHERE bucket < now() - p_h1_keep LIMIT p_batch));
    GET DIAGNOSTICS n_1h = ROW_COUNT;
    RETURN jsonb_build_object('raw_partitions', v_dropped, '5m', n_5m, '1h', n_1h,
                              'kept_from', (SELECT CASE WHEN isfinite(kept_from) THEN
                                  to_char(kept_from AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
                                  END FROM gpu_samples_retention),
                              'more', v_more OR greatest(n_5m, n_1h) >= p_batch);
END $$;
COMMENT ON FUNCTION gpu_samples_prune(interval, interval, interval, integer) IS 'Retention per grain (raw, 5m, 1h; each at least 1 hour): drops the oldest partition of raw samples once it is wholly older than raw_keep and rolled up, deletes at most p_batch rows of each rollup; makes the current and next partitions. Returns {"raw_partitions", "5m", "1h", "kept_from", "more"}.';
