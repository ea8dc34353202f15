-- 0044_monitor_store_group: a group of monitor samples stored set-wise (issue 28, item 1,
-- continued). After 0037 (one statement per group) and 0041 (a cheaper monitor_store),
-- what PostgreSQL spent per sample was monitor_store's own statements (about 13 a sample)
-- and the health re-evaluation at commit (monitor_health_refresh, the deferred trigger on
-- host_monitor: about 7 queries a sample). monitor_store_fenced now stores the usual
-- sample (below: "a plain sample") of every host of the group together, one statement per
-- table for the whole group, and re-evaluates those hosts' health in the same statement
-- that writes their host_monitor rows:
--   * the fence: one statement locks the group's host_monitor rows that this worker's
--     live lease holds, and their hosts rows, host by host in the order of their ids (the
--     order 0037 locked them in), and reads each host's state;
--   * a plain sample is one that monitor_store would store without an event, a new GPU
--     or a change of the inventory, and whose answer is therefore known: a document of
--     known members, each valid (the checks of monitor_store and 0041's monitor_gpu_ok, as
--     expressions: monitor_doc_ok, with a time string that cannot fail its cast:
--     monitor_at_ok), no events, a GPU list of 1 to cap GPUs that are exactly the host's
--     GPUs not missing (none new, none missing, none returning), no ECC growth or remap
--     failure that its derived_policy turns into an event, newer than the host's last
--     sample, within the retained samples and after the rollups' progress, and a host not
--     unreachable. Which samples are plain is decided by one statement for the group;
--   * the plain samples are then written by one statement per table: gpu_samples (one
--     INSERT ... SELECT over the GPUs of all of them), gpus (one UPDATE: every GPU is
--     the host's already; heap-only as since 0041) and host_monitor (one UPDATE, which
--     sets the health too, evaluated set-wise as monitor_health_of would at commit, and
--     emits host.health where it changed); the deferred trigger monitor_health_sample
--     skips those rows (its WHEN reads gpufleet.monitor_health_inline, set only around
--     that statement);
--   * every other sample (an event, a new or missing GPU, a document monitor_store would
--     refuse, a first sample, an older one, a group naming a host twice) goes through
--     monitor_store as before, in the order of the hosts' ids: a refused document still
--     fails the whole call with monitor_store's error, and the monitor stores the group's
--     samples one by one (provisioner/monitor/monitor_group.c), as with 0037.
-- The answer of a plain sample is monitor_store's for it ({"events": [], "missing_gpus":
-- [], "returned_gpus": [], "samples": n, "excess_gpus": 0, "newest": true});
-- tests/api/monitor_group.test.js compares the rows and answers of both ways.
-- What a group costs PostgreSQL besides (profiled with monitor_store_fenced called in a loop
-- on a scratch database, docs/performance.md):
--   * monitor_store_fenced's statements take their arguments as parameters, so the plan
--     cache planned them again at every call (a custom plan: the planner's estimate for the
--     group's few rows is below the generic plan's), inlined checks included: about 1.1 ms
--     a group of 4. The function now keeps generic plans (plan_cache_mode, below);
--   * 0041's member checks (monitor_num_ok, monitor_str_ok, monitor_bool_ok) evaluated their
--     member up to seven times (once per mention, the lookup and the cast each time): they
--     are restated below with the same answers, each member's type read once;
--   * every update of a gpus row evaluates its CHECK on the UUID, ^GPU-[0-9A-Fa-f-]{4,75}$,
--     whose bounded repeat costs PostgreSQL's regex engine about 10 us a match (8 a
--     sample): the constraint is restated as the same strings, matched the cheap way.

-- 0041's inlined checks, the same answers (the member's type is read once, a number is
-- cast twice instead of four times): true when monitor_num, monitor_str, monitor_bool would
-- accept v. tests/api/monitor_store_checks.test.js compares them, through monitor_gpu_ok,
-- with the member-by-member pass.
CREATE OR REPLACE FUNCTION monitor_num_ok(v jsonb, p_lo numeric, p_hi numeric, p_integer boolean)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE jsonb_typeof(v)
               WHEN 'number' THEN numrange(p_lo, p_hi, '[]') @> v::numeric
                                  AND (NOT p_integer OR mod(v::numeric, 1) = 0)
               WHEN 'null' THEN true
               ELSE v IS NULL END
$$;

CREATE OR REPLACE FUNCTION monitor_str_ok(v jsonb, p_max integer, p_pattern text)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE jsonb_typeof(v)
               WHEN 'string' THEN length(v #>> '{}') <= p_max
                                  AND (p_pattern IS NULL OR (v #>> '{}') ~ p_pattern)
               WHEN 'null' THEN true
               ELSE v IS NULL END
$$;

CREATE OR REPLACE FUNCTION monitor_bool_ok(v jsonb) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(jsonb_typeof(v) IN ('null', 'boolean'), true)
$$;

-- The same strings as 0014's ^GPU-[0-9A-Fa-f-]{4,75}$ (4 to 75 of those characters after
-- GPU-: a length of 8 to 79), about 12 times cheaper to match on every update of the row.
ALTER TABLE gpus DROP CONSTRAINT gpus_uuid_check,
    ADD CONSTRAINT gpus_uuid_check CHECK (uuid ~ '^GPU-[0-9A-Fa-f-]+$' AND length(uuid) BETWEEN 8 AND 79);

-- A time string that monitor_store accepts and whose cast to timestamptz cannot fail: a
-- strict subset of its pattern (every field in range, the day within its month, the offset
-- under 15 hours). Another string is left to monitor_store, which names the fault.
CREATE FUNCTION monitor_at_ok(t text) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN t IS NULL
                  OR t !~ '^[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[T ]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-](0[0-9]|1[0-4])(:?[0-5][0-9])?)$'
                THEN false
                ELSE substr(t, 9, 2)::integer <=
                     CASE substr(t, 6, 2)
                         WHEN '02' THEN CASE WHEN substr(t, 1, 4)::integer % 4 = 0
                                                  AND (substr(t, 1, 4)::integer % 100 <> 0
                                                       OR substr(t, 1, 4)::integer % 400 = 0)
                                             THEN 29 ELSE 28 END
                         WHEN '04' THEN 30 WHEN '06' THEN 30 WHEN '09' THEN 30 WHEN '11' THEN 30
                         ELSE 31 END END
$$;
COMMENT ON FUNCTION monitor_at_ok(text) IS 'monitor_store_fenced: whether a sample''s at is a time string monitor_store accepts whose cast cannot fail (a strict subset of its pattern; false leaves the sample to monitor_store).';

-- The members of a sample document other than its GPUs' values, as monitor_store checks
-- them, for a plain sample: no events, a GPU list of 1 to 64 members.
CREATE FUNCTION monitor_doc_ok(d jsonb) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN jsonb_typeof(d) IS DISTINCT FROM 'object' THEN false
                WHEN (d - ARRAY['at', 'gpus', 'events', 'kmsg_cursor', 'kmsg_mono', 'kmsg_note',
                                'kmsg_dropped', 'container_runtime', 'derived_policy']) <> '{}'::jsonb
                    THEN false
                WHEN jsonb_typeof(d -> 'at') IS DISTINCT FROM 'string' THEN false
                WHEN jsonb_typeof(d -> 'gpus') IS DISTINCT FROM 'array' THEN false
                WHEN d -> 'events' IS NOT NULL AND d -> 'events' NOT IN ('null'::jsonb, '[]'::jsonb)
                    THEN false
                WHEN d -> 'derived_policy' IS NOT NULL
                     AND (jsonb_typeof(d -> 'derived_policy') IS DISTINCT FROM 'object'
                          OR ((d -> 'derived_policy') - ARRAY['gpu_missing', 'ecc', 'remap']) <> '{}'::jsonb
                          OR NOT monitor_str_ok(d #> '{derived_policy,gpu_missing}', 8, '^(isolate|record|off)$')
                          OR NOT monitor_str_ok(d #> '{derived_policy,ecc}', 8, '^(isolate|record|off)$')
                          OR NOT monitor_str_ok(d #> '{derived_policy,remap}', 8, '^(isolate|record|off)$'))
                    THEN false
                ELSE monitor_at_ok(d ->> 'at')
                     AND jsonb_array_length(d -> 'gpus') BETWEEN 1 AND 64
                     AND monitor_str_ok(d -> 'kmsg_cursor', 256, '^[a-z]=[0-9a-f]+(;[a-z]=[0-9a-f]+)*$')
                     AND monitor_num_ok(d -> 'kmsg_mono', 0, 1e12, false)
                     AND monitor_str_ok(d -> 'kmsg_note', 256, NULL)
                     AND monitor_num_ok(d -> 'kmsg_dropped', 0, 1e9, true)
                     AND monitor_bool_ok(d -> 'container_runtime') END
$$;
COMMENT ON FUNCTION monitor_doc_ok(jsonb) IS 'monitor_store_fenced: whether a sample document''s members other than the GPUs'' values are as monitor_store accepts them, with no events and 1 to 64 GPUs listed (false leaves the sample to monitor_store).';

-- The deferred health re-evaluation skips the rows whose health the statement that wrote
-- them evaluated (its WHEN is evaluated when the row is written, not at commit).
DROP TRIGGER monitor_health_sample ON host_monitor;
CREATE CONSTRAINT TRIGGER monitor_health_sample AFTER INSERT OR UPDATE OF last_sample_at, missed
    ON host_monitor DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW
    WHEN (current_setting('gpufleet.monitor_health_inline', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION monitor_health_trigger();

CREATE OR REPLACE FUNCTION monitor_store_fenced(p_owner text, p_hosts uuid[], p_docs jsonb)
RETURNS TABLE (o_i integer, o_fenced boolean, o_result text, o_state text, o_held boolean,
               o_back text)
LANGUAGE plpgsql
-- generic plans: its statements are planned once per connection, not at every call (the
-- monitor_store it calls for the other samples runs under the same setting)
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    -- monitor_store's UUID pattern, ^GPU-[0-9A-Fa-f-]{4,75}$, is this one and a length of 8 to
    -- 79 (monitor_gpu_ok checks at most 79, the statement at least 8): the same strings, 18
    -- times cheaper to match (the bounded repeat is what costs)
    c_uuid_set CONSTANT text := '^GPU-[0-9A-Fa-f-]+$';
    c_pci CONSTANT text := '^[0-9A-F]{8}:[0-9A-F]{2}:[01][0-9A-F]\.[0-7]$';
    c_gpu_keys CONSTANT text[] := ARRAY['uuid', 'pci_bus_id', 'index', 'name', 'util_gpu', 'util_mem',
        'mem_used_mib', 'mem_total_mib', 'temp_c', 'power_w', 'clock_event_reasons',
        'ecc_uncorrected_volatile', 'retired_pages_pending', 'remapped_rows_pending',
        'remapped_rows_failure'];
    n integer;
    k integer;
    r record;
    a_fenced boolean[];
    a_state text[];
    a_held boolean[];
    v_plain integer[] := '{}'; -- positions (1-based) of the plain samples
    v_at timestamptz[] := '{}'; -- their times
    v_gpus integer[] := '{}'; -- their GPU counts
    v_kept timestamptz;
    v_width interval;
    v_done timestamptz;
    v_changed jsonb;
BEGIN
    IF p_owner IS NULL OR p_hosts IS NULL OR p_docs IS NULL
       OR jsonb_typeof(p_docs) IS DISTINCT FROM 'array'
       OR cardinality(p_hosts) <> jsonb_array_length(p_docs) THEN
        RAISE EXCEPTION 'monitor_store_fenced: an owner, and as many documents as hosts'
            USING ERRCODE = '22023';
    END IF;
    n := cardinality(p_hosts);
    a_fenced := array_fill(true, ARRAY[n]);
    a_state := array_fill(NULL::text, ARRAY[n]);
    a_held := array_fill(NULL::boolean, ARRAY[n]);

    -- The fence: each host's lease is this worker's and the worker's lease is live; its
    -- host_monitor and hosts rows stay locked until the transaction ends, taken host by
    -- host in the order of their ids (two groups, or a group and a claim, lock the rows in
    -- one order). A host that is fenced out is not locked and nothing is read of it.
    FOR r IN SELECT s.o, s.state, s.held
               FROM (SELECT u.o, u.h, h.state, h.quarantined_at IS NOT NULL AS held
                       FROM unnest(p_hosts) WITH ORDINALITY u(h, o)
                       JOIN host_monitor m ON m.host_id = u.h AND m.owner = p_owner
                       JOIN monitor_workers w ON w.owner = m.owner AND w.lease_until > now()
                       JOIN hosts h ON h.id = u.h
                      ORDER BY u.h, u.o
                        FOR UPDATE OF m, h) s LOOP
        a_fenced[r.o] := false;
        a_state[r.o] := r.state;
        a_held[r.o] := r.held;
    END LOOP;

    -- The plain samples (see above), unless the group names a host twice.
    IF n > 0 AND (SELECT count(DISTINCT h) FROM unnest(p_hosts) h) = n
       AND false = ANY (a_fenced) THEN
        SELECT kept_from, width INTO v_kept, v_width FROM gpu_samples_retention;
        SELECT max(done_upto) INTO v_done FROM gpu_samples_rollup_state;
        -- first the document alone (a CTE of its own: nothing below casts a member
        -- before these checks passed), then against the host's rows
        WITH x AS MATERIALIZED (
            SELECT o::integer AS o, p_hosts[o] AS h, p_docs -> (o::integer - 1) AS d
              FROM generate_subscripts(p_hosts, 1) o
             WHERE NOT a_fenced[o] AND a_state[o] <> 'unreachable'),
        ok AS MATERIALIZED (
            SELECT x.o, x.h, x.d,
                   CASE WHEN monitor_doc_ok(x.d)
                        THEN (SELECT bool_and(monitor_gpu_ok(t.g, c_gpu_keys, c_uuid_set, c_pci)
                                              AND coalesce(length(t.g ->> 'uuid') >= 8, false))
                                     AND count(DISTINCT t.g ->> 'uuid') = count(*)
                                     AND count(DISTINCT t.g ->> 'pci_bus_id') = count(t.g ->> 'pci_bus_id')
                                FROM jsonb_array_elements(x.d -> 'gpus') t(g))
                        ELSE false END AS ok
              FROM x),
        u AS MATERIALIZED (
            SELECT ok.o, ok.h, ok.d, (ok.d ->> 'at')::timestamptz AS at,
                   jsonb_array_length(ok.d -> 'gpus') AS listed
              FROM ok WHERE ok.ok)
        SELECT coalesce(array_agg(u.o ORDER BY u.o), '{}'), coalesce(array_agg(u.at ORDER BY u.o), '{}'),
               coalesce(array_agg(u.listed ORDER BY u.o), '{}')
          INTO v_plain, v_at, v_gpus
          FROM u
          JOIN host_monitor m ON m.host_id = u.h
          JOIN hosts h ON h.id = u.h
          JOIN pools p ON p.id = h.pool_id
         WHERE m.last_sample_at IS NOT NULL AND u.at >= m.last_sample_at
           AND u.at <= now() + interval '10 minutes' AND u.at >= now() - interval '30 days'
           AND u.at >= v_kept AND (v_done IS NULL OR u.at >= v_done)
           AND coalesce((p.spec #>> '{monitor,unreachable_after}')::integer, 3) > 0
           AND u.listed <= least(64, coalesce((p.spec ->> 'gpu_count')::integer, 62) + 2)
           -- exactly the host's GPUs not missing (one scan of its rows), none with an
           -- event derived from it
           AND (SELECT count(*) FILTER (WHERE x.missing_since IS NULL) = u.listed
                       AND count(l.g) FILTER (
                           WHERE x.missing_since IS NULL
                             AND NOT coalesce(x.ecc_uncorrected_volatile
                                              < (l.g ->> 'ecc_uncorrected_volatile')::numeric
                                              AND monitor_derived_policy(u.d, 'ecc') <> 'off', false)
                             AND NOT coalesce((l.g ->> 'remapped_rows_failure')::boolean
                                              AND NOT coalesce(x.remapped_rows_failure, false)
                                              AND monitor_derived_policy(u.d, 'remap') <> 'off', false))
                           = u.listed
                  FROM gpus x LEFT JOIN jsonb_array_elements(u.d -> 'gpus') l(g) ON l.g ->> 'uuid' = x.uuid
                 WHERE x.host_id = u.h);
    END IF;

    IF cardinality(v_plain) > 0 THEN
        -- the partitions of their times (usually one), as monitor_store makes them
        PERFORM gpu_samples_partition(b.lo)
           FROM (SELECT DISTINCT date_bin(v_width, t.at, timestamptz '2000-01-01 00:00Z') AS lo
                   FROM unnest(v_at) t(at)) b;
        INSERT INTO gpu_samples (at, host_id, clock_event_reasons, ecc_uncorrected_volatile,
                                 mem_used_mib, mem_total_mib, power_w, util_gpu, util_mem, temp_c,
                                 retired_pages_pending, remapped_rows_pending, remapped_rows_failure,
                                 gpu_uuid)
        SELECT f.at, p_hosts[f.o],
               (t.g ->> 'clock_event_reasons')::numeric::bigint,
               (t.g ->> 'ecc_uncorrected_volatile')::numeric::bigint,
               (t.g ->> 'mem_used_mib')::numeric::integer,
               (t.g ->> 'mem_total_mib')::numeric::integer,
               (t.g ->> 'power_w')::numeric::real,
               (t.g ->> 'util_gpu')::numeric::smallint,
               (t.g ->> 'util_mem')::numeric::smallint,
               (t.g ->> 'temp_c')::numeric::smallint,
               (t.g ->> 'retired_pages_pending')::boolean,
               (t.g ->> 'remapped_rows_pending')::boolean,
               (t.g ->> 'remapped_rows_failure')::boolean,
               t.g ->> 'uuid'
          FROM unnest(v_plain, v_at) f(o, at),
               jsonb_array_elements(p_docs -> (f.o - 1) -> 'gpus') WITH ORDINALITY t(g, i)
         ORDER BY f.o, t.i;
        -- every GPU of a plain sample is the host's already: its row's readings
        UPDATE gpus x SET
            pci_bus_id = coalesce(t.g ->> 'pci_bus_id', x.pci_bus_id),
            index = coalesce((t.g ->> 'index')::numeric::integer, x.index),
            name = coalesce(t.g ->> 'name', x.name),
            last_seen = f.at,
            util_gpu = (t.g ->> 'util_gpu')::numeric::smallint,
            util_mem = (t.g ->> 'util_mem')::numeric::smallint,
            mem_used_mib = (t.g ->> 'mem_used_mib')::numeric::integer,
            mem_total_mib = (t.g ->> 'mem_total_mib')::numeric::integer,
            temp_c = (t.g ->> 'temp_c')::numeric::smallint,
            power_w = (t.g ->> 'power_w')::numeric::real,
            clock_event_reasons = (t.g ->> 'clock_event_reasons')::numeric::bigint,
            ecc_uncorrected_volatile = (t.g ->> 'ecc_uncorrected_volatile')::numeric::bigint,
            retired_pages_pending = (t.g ->> 'retired_pages_pending')::boolean,
            remapped_rows_pending = (t.g ->> 'remapped_rows_pending')::boolean,
            remapped_rows_failure = (t.g ->> 'remapped_rows_failure')::boolean,
            missing_since = NULL
          FROM unnest(v_plain, v_at) f(o, at),
               jsonb_array_elements(p_docs -> (f.o - 1) -> 'gpus') t(g)
         WHERE x.host_id = p_hosts[f.o] AND x.uuid = t.g ->> 'uuid' AND x.last_seen <= f.at;
        -- host_monitor, and the host's health as monitor_health_of evaluates it once the
        -- sample is stored (missed 0, not unreachable: the open events and the missing
        -- GPUs, which a plain sample does not change), stored and emitted as
        -- monitor_health_refresh does at commit
        PERFORM set_config('gpufleet.monitor_health_inline', 'on', true);
        WITH s AS (
            SELECT f.o, p_hosts[f.o] AS h, f.at, p_docs -> (f.o - 1) AS d, m0.health AS old_health,
                   hh.name, hh.pool_id,
                   CASE WHEN e.n_iso > 0 OR g.n_missing > 0 THEN 'critical'
                        WHEN e.n_recent > 0 THEN 'degraded' ELSE 'ok' END AS health,
                   left(CASE
                       WHEN e.n_iso > 0 THEN concat_ws('; ',
                           format('%s open isolating event%s, the latest %s', e.n_iso,
                                  CASE WHEN e.n_iso = 1 THEN '' ELSE 's' END, e.w_iso),
                           CASE WHEN g.n_missing > 0
                                THEN format('%s GPU%s missing from the inventory', g.n_missing,
                                            CASE WHEN g.n_missing = 1 THEN '' ELSE 's' END) END)
                       WHEN g.n_missing > 0
                           THEN format('%s GPU%s missing from the inventory', g.n_missing,
                                       CASE WHEN g.n_missing = 1 THEN '' ELSE 's' END)
                       WHEN e.n_recent > 0
                           THEN format('%s event%s in the last hour, the latest %s', e.n_recent,
                                       CASE WHEN e.n_recent = 1 THEN '' ELSE 's' END, e.w_recent)
                       WHEN e.n_open > 0
                           THEN format('%s open event%s, none seen in the last hour', e.n_open,
                                       CASE WHEN e.n_open = 1 THEN '' ELSE 's' END)
                       ELSE 'the last sample shows no open event' END, 1024) AS reason
              FROM unnest(v_plain, v_at) f(o, at)
              JOIN host_monitor m0 ON m0.host_id = p_hosts[f.o]
              JOIN hosts hh ON hh.id = p_hosts[f.o]
             CROSS JOIN LATERAL (
                   SELECT count(*) FILTER (WHERE x.policy = 'isolate') AS n_iso,
                          count(*) FILTER (WHERE x.last_seen > now() - interval '1 hour') AS n_recent,
                          count(*) AS n_open,
                          (array_agg(monitor_event_words(x.kind, x.code, x.gpu_uuid, x.pci_bus_id, x.message)
                                     ORDER BY x.last_seen DESC, x.id DESC)
                               FILTER (WHERE x.policy = 'isolate'))[1] AS w_iso,
                          (array_agg(monitor_event_words(x.kind, x.code, x.gpu_uuid, x.pci_bus_id, x.message)
                                     ORDER BY x.last_seen DESC, x.id DESC)
                               FILTER (WHERE x.last_seen > now() - interval '1 hour'))[1] AS w_recent
                     FROM gpu_events x WHERE x.host_id = p_hosts[f.o] AND x.closed_at IS NULL) e
             CROSS JOIN LATERAL (
                   SELECT count(*) AS n_missing FROM gpus x
                    WHERE x.host_id = p_hosts[f.o] AND x.missing_since IS NOT NULL) g),
        u AS (
            UPDATE host_monitor m SET
                last_sample_at = greatest(m.last_sample_at, s.at),
                kmsg_cursor = coalesce(s.d ->> 'kmsg_cursor', m.kmsg_cursor),
                kmsg_mono = coalesce((s.d ->> 'kmsg_mono')::numeric::double precision, m.kmsg_mono),
                missed = 0, state = s.health, updated_at = now(),
                health = s.health, health_reason = s.reason,
                health_changed_at = CASE WHEN s.health IS DISTINCT FROM m.health THEN now()
                                         ELSE m.health_changed_at END
              FROM s WHERE m.host_id = s.h
            RETURNING m.host_id, s.pool_id, jsonb_build_object(
                'host_name', s.name, 'from', s.old_health, 'to', s.health, 'reason', s.reason,
                'last_sample_at', to_char(m.last_sample_at AT TIME ZONE 'UTC',
                                          'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                'missed', m.missed) AS data, s.health IS DISTINCT FROM s.old_health AS changed)
        SELECT coalesce(jsonb_agg(jsonb_build_array(u.host_id, u.pool_id, u.data) ORDER BY u.host_id)
                            FILTER (WHERE u.changed), '[]')
          INTO v_changed FROM u;
        PERFORM set_config('gpufleet.monitor_health_inline', '', true);
        -- host.health where it changed, as monitor_health_refresh emits it
        PERFORM events_emit('host.health', (c ->> 1)::uuid, (c ->> 0)::uuid, c -> 2)
           FROM jsonb_array_elements(v_changed) WITH ORDINALITY t(c, i) ORDER BY t.i;
    END IF;

    -- One row per sample; the other samples stored by monitor_store, in the order of their
    -- hosts' ids.
    FOR k IN SELECT u.o FROM unnest(p_hosts) WITH ORDINALITY u(h, o) ORDER BY u.h, u.o LOOP
        o_i := k;
        o_fenced := a_fenced[k];
        o_result := NULL;
        o_state := NULL;
        o_held := NULL;
        o_back := NULL;
        IF NOT o_fenced THEN
            IF k = ANY (v_plain) THEN
                o_result := jsonb_build_object('events', '[]'::jsonb, 'missing_gpus', '[]'::jsonb,
                    'returned_gpus', '[]'::jsonb, 'samples', v_gpus[array_position(v_plain, k)],
                    'excess_gpus', 0, 'newest', true)::text;
            ELSE
                o_result := monitor_store(p_hosts[k], p_docs -> (k - 1))::text;
            END IF;
            o_state := a_state[k];
            o_held := a_held[k];
            IF o_state = 'unreachable' THEN
                SELECT x.from_state INTO o_back FROM host_state_history x
                 WHERE x.host_id = p_hosts[k] AND x.to_state = 'unreachable'
                 ORDER BY x.id DESC LIMIT 1;
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;
COMMENT ON FUNCTION monitor_store_fenced(text, uuid[], jsonb) IS 'The monitor''s samples of a group (p_docs[i] of host p_hosts[i+1]), each fenced by its host''s lease held by p_owner: one row per sample, o_i its position (1-based); o_fenced when the lease is not p_owner''s (nothing stored), else o_result is monitor_store''s answer and o_state, o_held, o_back the host''s state, its quarantine hold and, when unreachable, the state it had before. The plain samples (no event, the host''s GPUs unchanged; migrations/0044) are stored set-wise with their hosts'' health, the others by monitor_store. An invalid document fails the whole call (the monitor then stores the group''s samples one by one).';
