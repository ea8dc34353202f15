-- bench/monitor.d/store-0040.sql: monitor_store and the gpus indexes as they were before
-- migration 0041 (0027's function with 0029's kernel_log_gap kind, and the index
-- gpus_last_seen), for bench/monitor's per-sample window (BENCH_MONITOR_COMPARE=1): that
-- window measures the path before issue 28 whole, its five round trips and this store.
-- bench/monitor puts the current definition back (and drops the index) after the window.
-- The table's fillfactor (70 since 0041) is left as it is: with gpus_last_seen every GPU
-- update is a new index entry anyway.
-- And 0014's check on a GPU's UUID, which every update of a gpus row evaluates (0044
-- restates it: the same strings, matched without the costly bounded repeat).
CREATE OR REPLACE FUNCTION monitor_store(p_host uuid, p_doc jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    c_uuid CONSTANT text := '^GPU-[0-9A-Fa-f-]{4,75}$';
    c_pci CONSTANT text := '^[0-9A-F]{8}:[0-9A-F]{2}:[01][0-9A-F]\.[0-7]$';
    c_kinds CONSTANT text := '^(xid|sxid|fell_off_bus|ecc|remap|fabric|thermal|gpu_missing|container_runtime|unreachable|gpu_excess|gpu_uuid_duplicate|kernel_log_gap)$';
    c_margin CONSTANT integer := 2; -- 0027: GPUs recorded per host: the pool's gpu_count + 2
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
    -- 0027: the cap, and which of the listed GPUs are recorded
    v_expect integer;
    v_cap integer;
    v_listed integer := 0;
    v_kept integer := 0;
    v_pos integer[] := '{}';
    v_dropped text[] := '{}';
    v_dup record;
    v_project uuid;
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
    SELECT h.project_id, (p.spec ->> 'gpu_count')::int INTO v_project, v_expect
      FROM hosts h JOIN pools p ON p.id = h.pool_id WHERE h.id = p_host;
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
        v_listed := jsonb_array_length(v_gpus);
        SELECT coalesce(jsonb_object_agg(uuid, jsonb_build_object(
                   'ecc', ecc_uncorrected_volatile, 'failure', remapped_rows_failure,
                   'missing', missing_since IS NOT NULL)), '{}')
          INTO v_old FROM gpus WHERE host_id = p_host;
        -- 0027: at most v_cap GPUs are recorded: the ones this host already has first (a
        -- host cannot push its own GPUs out by listing new ones), then new ones in the
        -- order listed; the rest are counted in a gpu_excess event (policy isolate)
        v_cap := least(64, coalesce(v_expect, 62) + c_margin);
        FOR pass IN 1 .. 2 LOOP
            FOR i IN 1 .. v_listed LOOP
                g := v_gpus -> (i - 1);
                w := format('gpus[%s]', i - 1);
                IF jsonb_typeof(g) IS DISTINCT FROM 'object' THEN
                    PERFORM monitor_bad(w, 'must be an object');
                END IF;
                k := monitor_str(g, 'uuid', 79, c_uuid, true, w);
                IF i - 1 = ANY (v_pos) OR (pass = 1 AND NOT v_old ? k) THEN
                    CONTINUE;
                END IF;
                IF cardinality(v_pos) < v_cap THEN
                    v_pos := v_pos || (i - 1);
                ELSIF pass = 2 AND NOT k = ANY (v_dropped) THEN
                    v_dropped := v_dropped || k;
                END IF;
            END LOOP;
        END LOOP;
        SELECT coalesce(array_agg(x ORDER BY x), '{}') INTO v_pos FROM unnest(v_pos) x;
        n := cardinality(v_pos);
        IF v_listed > n THEN
            v_derived := v_derived || jsonb_build_object('kind', 'gpu_excess',
                'category', 'inventory', 'policy', 'isolate',
                'raw', left(array_to_string(v_dropped, ' '), 2048),
                'message', format('the sample lists %s GPUs; the pool expects %s and at most %s '
                                  '(its gpu_count + %s) are recorded: %s not recorded',
                                  v_listed, coalesce(v_expect::text, 'none'), v_cap, c_margin,
                                  v_listed - n));
        END IF;
        FOR i IN 1 .. n LOOP
            g := v_gpus -> v_pos[i];
            w := format('gpus[%s]', v_pos[i]);
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
            -- 0027: a GPU new to this host that another host reports too: recorded as
            -- gpu_uuid_duplicate on this host (the other host's row is not touched; it
            -- is named only when it is of this host's project)
            IF o IS NULL THEN
                SELECT x.host_id, x.last_seen, hh.name, hh.project_id INTO v_dup
                  FROM gpus x JOIN hosts hh ON hh.id = x.host_id
                 WHERE x.uuid = a_uuid[i] AND x.host_id <> p_host
                 ORDER BY x.last_seen DESC LIMIT 1;
                IF FOUND THEN
                    v_derived := v_derived || jsonb_build_object('kind', 'gpu_uuid_duplicate',
                        'category', 'identity', 'policy', 'record', 'gpu_uuid', a_uuid[i],
                        'message', format('GPU %s is also reported by %s (last seen %s): '
                                          'a GPU moved between hosts, or a host reports '
                                          'another''s GPU', a_uuid[i],
                                          CASE WHEN v_dup.project_id = v_project
                                               THEN format('host %s (%s)', v_dup.name, v_dup.host_id)
                                               ELSE 'a host of another project' END,
                                          to_char(v_dup.last_seen AT TIME ZONE 'UTC',
                                                  'YYYY-MM-DD"T"HH24:MI:SS"Z"')));
                END IF;
            END IF;
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
        ON CONFLICT (host_id, uuid) DO UPDATE SET
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
            SELECT pci_bus_id INTO v_gpci FROM gpus WHERE host_id = p_host AND uuid = v_guuid;
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
        'excess_gpus', v_listed - n,
        'newest', v_newest);
END $$;

CREATE INDEX IF NOT EXISTS gpus_last_seen ON gpus (last_seen);
ALTER TABLE gpus DROP CONSTRAINT gpus_uuid_check,
    ADD CONSTRAINT gpus_uuid_check CHECK (uuid ~ '^GPU-[0-9A-Fa-f-]{4,75}$');
