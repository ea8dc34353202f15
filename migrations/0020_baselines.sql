-- 0020_baselines: throughput baselines recorded with their conditions (issue 14,
-- docs/rollouts.md §1). A figure without its conditions is not a baseline: each row says
-- under which stack, on which GPUs and with which workload it was measured, and two
-- figures are compared only when those conditions match (planner/baseline.h).
--
-- Two sources: every accepted gate run whose workload check passed records one, in the
-- run's own transaction (the trigger below), and a work report record that names a
-- baseline window records one (db/baselines.c, in the report's transaction).

-- The canonical JSON text of a document: object keys sorted bytewise, no whitespace,
-- strings escaped as JSON does. The workload hash is the sha256 of this text.
CREATE FUNCTION canonical_json(j jsonb) RETURNS text LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    out text;
BEGIN
    CASE jsonb_typeof(j)
    WHEN 'object' THEN
        SELECT '{' || coalesce(string_agg(to_json(e.key)::text || ':' || canonical_json(e.value),
                                          ',' ORDER BY e.key COLLATE "C"), '') || '}'
          INTO out FROM jsonb_each(j) AS e;
    WHEN 'array' THEN
        SELECT '[' || coalesce(string_agg(canonical_json(e.value), ',' ORDER BY e.n), '') || ']'
          INTO out FROM jsonb_array_elements(j) WITH ORDINALITY AS e(value, n);
    ELSE
        out := j::text;
    END CASE;
    RETURN out;
END;
$$;
COMMENT ON FUNCTION canonical_json(jsonb) IS 'Canonical JSON text: object keys sorted bytewise, compact, JSON string escapes.';

-- The hash of a pool gate's workload definition (spec.gate.workload): what was run, not
-- the threshold, so the same workload gives the same hash on every pool.
CREATE FUNCTION workload_hash(workload jsonb) RETURNS text LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT 'sha256:' || encode(sha256(convert_to(canonical_json(workload - 'min' - 'timeout_s'),
                                                 'UTF8')), 'hex')
$$;
COMMENT ON FUNCTION workload_hash(jsonb) IS 'sha256: + hex of the canonical JSON of a pool gate workload without min and timeout_s (command, metric, input, concurrency, cache).';

CREATE TABLE baselines (
    seq               bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    source            text NOT NULL CHECK (source IN ('gate', 'work_report')),
    gate_run_id       uuid REFERENCES gate_runs (id) ON DELETE SET NULL,
    work_report_id    uuid REFERENCES work_reports (id) ON DELETE SET NULL,
    window_start      timestamptz,
    window_end        timestamptz,
    host_id           uuid REFERENCES hosts (id) ON DELETE SET NULL,
    pool_id           uuid NOT NULL REFERENCES pools (id) ON DELETE CASCADE,
    stack_id          uuid NOT NULL REFERENCES stacks (id) ON DELETE RESTRICT,
    image_digest      text NOT NULL,
    framework         text NOT NULL,
    framework_version text,
    driver_version    text,
    cuda_version      text,
    model_revision    text,
    gpu_model         text CHECK (length(gpu_model) BETWEEN 1 AND 400),
    gpu_count         integer CHECK (gpu_count >= 0),
    workload_hash     text CHECK (workload_hash ~ '^sha256:[0-9a-f]{64}$'),
    input             text CHECK (length(input) BETWEEN 1 AND 200),
    concurrency       integer CHECK (concurrency BETWEEN 1 AND 1000000),
    cache             text CHECK (cache IN ('warm', 'cold')),
    metric            text NOT NULL CHECK (metric ~ '^[a-z_]{1,64}$'),
    value             double precision NOT NULL
                      CHECK (value >= 0 AND value < 'Infinity'::double precision),
    measured_at       timestamptz NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    CHECK (source <> 'work_report' OR (window_start IS NOT NULL AND window_end > window_start)),
    CHECK (source <> 'gate' OR workload_hash IS NOT NULL)
);
-- One baseline per gate run and per work report.
CREATE UNIQUE INDEX baselines_gate_run ON baselines (gate_run_id) WHERE gate_run_id IS NOT NULL;
CREATE UNIQUE INDEX baselines_work_report ON baselines (work_report_id)
    WHERE work_report_id IS NOT NULL;
CREATE INDEX baselines_pool_seq ON baselines (pool_id, seq);
CREATE INDEX baselines_stack_seq ON baselines (stack_id, seq);
CREATE INDEX baselines_gpu_model_seq ON baselines (gpu_model, seq);

COMMENT ON TABLE baselines IS 'Throughput baselines with the conditions they were measured under (docs/rollouts.md §1): from accepted gate runs whose workload check passed, and from work report windows that name a baseline. Compared only when the conditions match (planner/baseline.h).';
COMMENT ON COLUMN baselines.seq IS 'Recording order; the keyset for pagination (newest first).';
COMMENT ON COLUMN baselines.id IS 'Public identifier.';
COMMENT ON COLUMN baselines.source IS 'gate (an accepted gate run with a workload) or work_report (a report record that named a baseline window).';
COMMENT ON COLUMN baselines.gate_run_id IS 'The gate run it came from (source gate).';
COMMENT ON COLUMN baselines.work_report_id IS 'The work report it came from (source work_report).';
COMMENT ON COLUMN baselines.window_start IS 'The report window''s start (source work_report).';
COMMENT ON COLUMN baselines.window_end IS 'The report window''s end (source work_report).';
COMMENT ON COLUMN baselines.host_id IS 'The host it was measured on.';
COMMENT ON COLUMN baselines.pool_id IS 'The host''s pool (the gate run''s pool; for a report, the host''s pool then). Not a condition: the same workload on the same GPUs in another pool is comparable.';
COMMENT ON COLUMN baselines.stack_id IS 'The stack under which it was measured.';
COMMENT ON COLUMN baselines.image_digest IS 'The stack''s image digest (copied; describes the stack, not a condition).';
COMMENT ON COLUMN baselines.framework IS 'The stack''s framework name (a condition).';
COMMENT ON COLUMN baselines.framework_version IS 'The stack''s framework version (copied; not a condition).';
COMMENT ON COLUMN baselines.driver_version IS 'The stack''s driver version (copied; not a condition).';
COMMENT ON COLUMN baselines.cuda_version IS 'The stack''s CUDA version (copied; not a condition).';
COMMENT ON COLUMN baselines.model_revision IS 'The stack''s model revision, null when it names none (a condition; null equals only null).';
COMMENT ON COLUMN baselines.gpu_model IS 'The GPU name the host had (nvidia-smi name, from the gate''s inventory or the host''s facts; distinct names joined by ", "); null when unknown (a condition).';
COMMENT ON COLUMN baselines.gpu_count IS 'How many GPUs the host had (the gate''s inventory or the host''s facts); null when unknown (a condition).';
COMMENT ON COLUMN baselines.workload_hash IS 'workload_hash() of the pool gate''s workload at the gate version used (source gate); null for a work report, which is not the gate''s workload (a condition).';
COMMENT ON COLUMN baselines.input IS 'The workload''s declared input (text of at most 200 characters), null when undeclared (a condition).';
COMMENT ON COLUMN baselines.concurrency IS 'The workload''s declared concurrency, null when undeclared (a condition).';
COMMENT ON COLUMN baselines.cache IS 'The workload''s declared cache state, warm or cold, null when undeclared (a condition).';
COMMENT ON COLUMN baselines.metric IS 'The metric''s name: the gate workload''s metric (e.g. tokens_per_second), or <unit>_per_second for a work report (a condition).';
COMMENT ON COLUMN baselines.value IS 'The metric''s value: finite, at least 0.';
COMMENT ON COLUMN baselines.measured_at IS 'When it was measured: the gate run''s finished_at, or the report window''s end.';
COMMENT ON COLUMN baselines.created_at IS 'When it was recorded.';

-- An accepted gate run whose workload check passed records its baseline, in the run's
-- transaction, when the run's stack is the host's current stack. The workload definition is the pool's spec.gate.workload at the run's
-- gate_version: when the pool's gate changed since the run began, the definition that ran
-- is no longer known and nothing is recorded (fail closed: no baseline, no comparison).
CREATE FUNCTION baseline_on_gate_run() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    w jsonb;
    chk jsonb;
    inv jsonb;
    st record;
    v double precision;
    gmodel text;
    gcount integer;
BEGIN
    IF NEW.kind <> 'gate' OR NEW.verdict <> 'accept' OR NEW.stack_id IS NULL
       OR NEW.pool_id IS NULL OR NEW.gate_version IS NULL THEN
        RETURN NULL;
    END IF;
    -- a gate against the desired stack of a host whose provisioning has not succeeded is
    -- evidence only (provisioner/job_gate.c): it measured no stack the host runs
    IF NOT EXISTS (SELECT 1 FROM hosts hh
                    WHERE hh.id = NEW.host_id AND hh.current_stack_id = NEW.stack_id) THEN
        RETURN NULL;
    END IF;
    SELECT (p.spec -> 'gate' -> 'workload')::jsonb INTO w
      FROM pools p WHERE p.id = NEW.pool_id AND p.gate_version = NEW.gate_version;
    IF w IS NULL OR jsonb_typeof(w) <> 'object' THEN
        RETURN NULL;
    END IF;
    SELECT c INTO chk FROM jsonb_array_elements(NEW.checks) AS c
     WHERE c ->> 'name' = 'workload' LIMIT 1;
    IF chk IS NULL OR chk ->> 'status' IS DISTINCT FROM 'pass'
       OR jsonb_typeof(chk -> 'values' -> 'value') IS DISTINCT FROM 'number'
       OR chk #>> '{values,metric}' IS DISTINCT FROM w ->> 'metric' THEN
        RETURN NULL;
    END IF;
    IF (chk #>> '{values,value}')::numeric NOT BETWEEN 0 AND 1e300 THEN
        RETURN NULL;
    END IF;
    v := (chk #>> '{values,value}')::double precision;
    SELECT s.image_digest, s.framework, s.spec #>> '{framework,version}' AS framework_version,
           s.spec ->> 'driver_version' AS driver_version, s.spec ->> 'cuda_version' AS cuda_version,
           s.spec ->> 'model_revision' AS model_revision
      INTO st FROM stacks s WHERE s.id = NEW.stack_id;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    -- the GPUs: what the gate's inventory saw, else the host's facts
    SELECT c -> 'values' INTO inv FROM jsonb_array_elements(NEW.checks) AS c
     WHERE c ->> 'name' = 'gpu_inventory' AND c ->> 'status' = 'pass'
       AND jsonb_typeof(c -> 'values' -> 'gpus') = 'array' LIMIT 1;
    IF inv IS NULL THEN
        SELECT hh.facts INTO inv FROM hosts hh
         WHERE hh.id = NEW.host_id AND jsonb_typeof(hh.facts -> 'gpus') = 'array';
    END IF;
    IF inv IS NOT NULL THEN
        SELECT left(string_agg(DISTINCT g ->> 'name', ', ' ORDER BY g ->> 'name'), 400),
               count(*)::int
          INTO gmodel, gcount FROM jsonb_array_elements(inv -> 'gpus') AS g;
        IF jsonb_typeof(inv -> 'gpu_count') = 'number'
           AND (inv ->> 'gpu_count')::numeric BETWEEN 0 AND 1000000 THEN
            gcount := (inv ->> 'gpu_count')::int;
        END IF;
    END IF;
    INSERT INTO baselines (source, gate_run_id, host_id, pool_id, stack_id, image_digest,
                           framework, framework_version, driver_version, cuda_version,
                           model_revision, gpu_model, gpu_count, workload_hash, input,
                           concurrency, cache, metric, value, measured_at)
    VALUES ('gate', NEW.id, NEW.host_id, NEW.pool_id, NEW.stack_id, st.image_digest,
            st.framework, st.framework_version, st.driver_version, st.cuda_version,
            st.model_revision, nullif(gmodel, ''), gcount, workload_hash(w), w ->> 'input',
            (w ->> 'concurrency')::int, w ->> 'cache', w ->> 'metric', v, NEW.finished_at)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
EXCEPTION
    -- a figure the table refuses never costs the gate run its record
    WHEN check_violation OR not_null_violation OR numeric_value_out_of_range
         OR invalid_text_representation THEN
        RAISE WARNING 'gate run %: no baseline recorded: %', NEW.id, SQLERRM;
        RETURN NULL;
END;
$$;
COMMENT ON FUNCTION baseline_on_gate_run() IS 'Records the baseline of an accepted gate run whose workload check passed (docs/rollouts.md §1).';

CREATE TRIGGER gate_runs_baseline AFTER INSERT ON gate_runs
    FOR EACH ROW WHEN (NEW.kind = 'gate' AND NEW.verdict = 'accept')
    EXECUTE FUNCTION baseline_on_gate_run();
