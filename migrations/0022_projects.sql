-- 0022_projects: one fleet, many teams. A project owns pools, credentials, briefs, stacks,
-- webhooks (and through its pools: hosts, jobs, gate runs, work reports, rollouts,
-- baselines, recommendations); events and audit rows carry the project they concern.
-- Members hold a role per project; projects carry GPU quotas and a monthly budget. What
-- existed before moves into the project named `default` (docs/projects.md).

CREATE TABLE projects (
    seq                bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name               text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
    description        text NOT NULL DEFAULT '' CHECK (length(description) <= 500),
    budget_monthly     numeric(14, 2) CHECK (budget_monthly >= 0),
    budget_thresholds  integer[] NOT NULL DEFAULT '{50,80,100}'
                       CHECK (cardinality(budget_thresholds) BETWEEN 1 AND 10
                              AND 0 < ALL (budget_thresholds) AND 1000 >= ALL (budget_thresholds)),
    on_exhausted       text NOT NULL DEFAULT 'notify'
                       CHECK (on_exhausted IN ('notify', 'refuse_new', 'stop_idle')),
    revision           integer NOT NULL DEFAULT 1 CHECK (revision >= 1),
    created_by         text NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE projects IS 'Teams sharing one fleet: each owns its pools, credentials, briefs, stacks, webhooks and (through its pools) hosts; roles are held per project.';
COMMENT ON COLUMN projects.seq IS 'Creation order; the keyset for pagination.';
COMMENT ON COLUMN projects.id IS 'Public identifier.';
COMMENT ON COLUMN projects.name IS 'Unique name (as tokens and role maps name the project); never changes.';
COMMENT ON COLUMN projects.description IS 'Free text for people.';
COMMENT ON COLUMN projects.budget_monthly IS 'Monthly budget in the pools'' currency, or NULL for none.';
COMMENT ON COLUMN projects.budget_thresholds IS 'Percentages of the budget at which budget.threshold is emitted, once per threshold per month.';
COMMENT ON COLUMN projects.on_exhausted IS 'At 100%: notify (events only), refuse_new (new hosts and provisionings answer 409 budget_exhausted) or stop_idle (also stop hosts the idle rule finds idle, with evidence). Running work is never stopped.';
COMMENT ON COLUMN projects.revision IS 'Starts at 1; each accepted change adds 1 (the ETag).';
COMMENT ON COLUMN projects.created_by IS 'Subject of the platform admin who created it.';
COMMENT ON COLUMN projects.created_at IS 'When the project was created.';
COMMENT ON COLUMN projects.updated_at IS 'When it last changed.';

INSERT INTO projects (id, name, description, created_by)
VALUES ('00000000-0000-4000-8000-000000000001', 'default',
        'Everything that existed before projects; global operator and viewer tokens act here.',
        'migration');

CREATE TABLE project_members (
    project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    subject     text NOT NULL CHECK (length(subject) BETWEEN 1 AND 128),
    role        text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin', 'reporter')),
    created_by  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, subject)
);
CREATE INDEX project_members_subject ON project_members (subject);
COMMENT ON TABLE project_members IS 'Roles held by subjects (token sub or OIDC principal) in a project, besides those their tokens carry.';
COMMENT ON COLUMN project_members.project_id IS 'The project.';
COMMENT ON COLUMN project_members.subject IS 'The subject, as tokens name it.';
COMMENT ON COLUMN project_members.role IS 'viewer, operator, admin or reporter.';
COMMENT ON COLUMN project_members.created_by IS 'Who granted it.';
COMMENT ON COLUMN project_members.created_at IS 'When.';

CREATE TABLE project_quotas (
    project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    gpu_model   text NOT NULL REFERENCES gpu_models (key) ON DELETE CASCADE,
    max_gpus    integer NOT NULL CHECK (max_gpus BETWEEN 0 AND 1000000),
    PRIMARY KEY (project_id, gpu_model)
);
COMMENT ON TABLE project_quotas IS 'The most GPUs of a model a project may hold: GPUs of its hosts that are not stopped (pool gpu_count per host).';
COMMENT ON COLUMN project_quotas.project_id IS 'The project.';
COMMENT ON COLUMN project_quotas.gpu_model IS 'A key of the GPU model catalog.';
COMMENT ON COLUMN project_quotas.max_gpus IS 'The limit; lowering it below usage refuses the next addition and touches no host.';

CREATE TABLE budget_alerts (
    project_id    uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    month         date NOT NULL CHECK (extract(day FROM month) = 1),
    threshold_pct integer NOT NULL,
    spend         numeric(14, 2) NOT NULL,
    budget        numeric(14, 2) NOT NULL,
    at            timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, month, threshold_pct)
);
COMMENT ON TABLE budget_alerts IS 'Budget thresholds crossed: one row per project, month (UTC) and threshold, so budget.threshold is emitted once whichever replica sees it first.';
COMMENT ON COLUMN budget_alerts.project_id IS 'The project.';
COMMENT ON COLUMN budget_alerts.month IS 'First day of the UTC month.';
COMMENT ON COLUMN budget_alerts.threshold_pct IS 'The threshold crossed.';
COMMENT ON COLUMN budget_alerts.spend IS 'Month-to-date spend when it was crossed.';
COMMENT ON COLUMN budget_alerts.budget IS 'The monthly budget then.';
COMMENT ON COLUMN budget_alerts.at IS 'When.';

-- Every owned row names its project; what exists goes to default.
ALTER TABLE pools ADD COLUMN project_id uuid REFERENCES projects (id) ON DELETE RESTRICT;
ALTER TABLE credentials ADD COLUMN project_id uuid REFERENCES projects (id) ON DELETE RESTRICT;
ALTER TABLE briefs ADD COLUMN project_id uuid REFERENCES projects (id) ON DELETE RESTRICT;
ALTER TABLE stacks ADD COLUMN project_id uuid REFERENCES projects (id) ON DELETE RESTRICT;
ALTER TABLE webhooks ADD COLUMN project_id uuid REFERENCES projects (id) ON DELETE RESTRICT;
ALTER TABLE hosts ADD COLUMN project_id uuid REFERENCES projects (id) ON DELETE RESTRICT;
UPDATE pools SET project_id = '00000000-0000-4000-8000-000000000001';
UPDATE credentials SET project_id = '00000000-0000-4000-8000-000000000001';
UPDATE briefs SET project_id = '00000000-0000-4000-8000-000000000001';
ALTER TABLE stacks DISABLE TRIGGER stacks_immutable;
UPDATE stacks SET project_id = '00000000-0000-4000-8000-000000000001';
ALTER TABLE stacks ENABLE TRIGGER stacks_immutable;
UPDATE webhooks SET project_id = '00000000-0000-4000-8000-000000000001';
ALTER TABLE hosts DISABLE TRIGGER USER;
UPDATE hosts h SET project_id = p.project_id FROM pools p WHERE p.id = h.pool_id;
ALTER TABLE hosts ENABLE TRIGGER USER;
ALTER TABLE pools ALTER COLUMN project_id SET NOT NULL;
ALTER TABLE credentials ALTER COLUMN project_id SET NOT NULL;
ALTER TABLE briefs ALTER COLUMN project_id SET NOT NULL;
ALTER TABLE stacks ALTER COLUMN project_id SET NOT NULL;
ALTER TABLE webhooks ALTER COLUMN project_id SET NOT NULL;
ALTER TABLE hosts ALTER COLUMN project_id SET NOT NULL;
COMMENT ON COLUMN pools.project_id IS 'The project that owns the pool (and its hosts).';
COMMENT ON COLUMN credentials.project_id IS 'The project that owns the credential; only its pools'' hosts may use it.';
COMMENT ON COLUMN briefs.project_id IS 'The project that owns the brief.';
COMMENT ON COLUMN stacks.project_id IS 'The project that owns the stack (readable by all when shared).';
COMMENT ON COLUMN webhooks.project_id IS 'The project whose events the webhook receives.';
COMMENT ON COLUMN hosts.project_id IS 'Its pool''s project, kept by hosts_project() (for filtering in SQL).';

-- Names are unique within a project, not across projects (no existence leak).
ALTER TABLE pools DROP CONSTRAINT pools_name_key;
ALTER TABLE credentials DROP CONSTRAINT credentials_name_key;
ALTER TABLE hosts DROP CONSTRAINT hosts_name_key;
CREATE UNIQUE INDEX pools_project_name ON pools (project_id, name);
CREATE UNIQUE INDEX credentials_project_name ON credentials (project_id, name);
CREATE UNIQUE INDEX hosts_project_name ON hosts (project_id, name);
CREATE INDEX briefs_project_seq ON briefs (project_id, seq);
CREATE INDEX stacks_project_seq ON stacks (project_id, seq);
CREATE INDEX hosts_project_seq ON hosts (project_id, seq);
CREATE INDEX pools_project_seq ON pools (project_id, seq);
CREATE INDEX credentials_project_seq ON credentials (project_id, seq);
CREATE INDEX webhooks_project ON webhooks (project_id);

-- A host's project is its pool's.
CREATE FUNCTION hosts_project() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT project_id INTO NEW.project_id FROM pools WHERE id = NEW.pool_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'host %: no pool has id %', NEW.id, NEW.pool_id
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER hosts_project BEFORE INSERT OR UPDATE OF pool_id ON hosts
    FOR EACH ROW EXECUTE FUNCTION hosts_project();
COMMENT ON FUNCTION hosts_project() IS 'Sets hosts.project_id from the host''s pool.';

-- Shared rows: readable and usable by every project, changed by platform admins only.
ALTER TABLE stacks ADD COLUMN shared boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN stacks.shared IS 'Readable and usable by every project (set by a platform admin).';
ALTER TABLE gpu_models ADD COLUMN project_id uuid REFERENCES projects (id) ON DELETE RESTRICT,
                       ADD COLUMN shared boolean NOT NULL DEFAULT false;
UPDATE gpu_models SET shared = true;
UPDATE gpu_models SET project_id = '00000000-0000-4000-8000-000000000001' WHERE source = 'custom';
COMMENT ON COLUMN gpu_models.project_id IS 'The project that added a custom model; NULL for the catalog''s rows.';
COMMENT ON COLUMN gpu_models.shared IS 'Readable and usable by every project (the catalog''s rows, or set by a platform admin).';

-- Stacks stay immutable but for their shared flag.
CREATE OR REPLACE FUNCTION stacks_refuse_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (to_jsonb(NEW) - 'shared') = (to_jsonb(OLD) - 'shared') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'stacks are immutable; create a new stack that supersedes %', OLD.id
        USING ERRCODE = 'check_violation';
END $$;
COMMENT ON FUNCTION stacks_refuse_update() IS 'Refuses every UPDATE of stacks but one of the shared flag.';

-- Events and audit rows name the project they concern, for filtering in SQL.
ALTER TABLE events ADD COLUMN project_id uuid;
CREATE INDEX events_project ON events (project_id, id) WHERE project_id IS NOT NULL;
COMMENT ON COLUMN events.project_id IS 'The project concerned (from the host, else the pool, else set by the emitter); NULL: the platform''s own.';
CREATE FUNCTION events_project() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.project_id IS NULL AND NEW.host_id IS NOT NULL THEN
        SELECT project_id INTO NEW.project_id FROM hosts WHERE id = NEW.host_id;
    END IF;
    IF NEW.project_id IS NULL AND NEW.pool_id IS NOT NULL THEN
        SELECT project_id INTO NEW.project_id FROM pools WHERE id = NEW.pool_id;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER events_project BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_project();
COMMENT ON FUNCTION events_project() IS 'Sets events.project_id from the host or the pool when the emitter did not.';
UPDATE events e SET project_id = coalesce((SELECT h.project_id FROM hosts h WHERE h.id = e.host_id),
                                         (SELECT p.project_id FROM pools p WHERE p.id = e.pool_id))
 WHERE e.host_id IS NOT NULL OR e.pool_id IS NOT NULL;

ALTER TABLE audit_events ADD COLUMN project_id uuid,
                         ADD COLUMN before jsonb,
                         ADD COLUMN after jsonb;
CREATE INDEX audit_events_project_seq ON audit_events (project_id, seq);
COMMENT ON COLUMN audit_events.project_id IS 'The project the act concerns; NULL: the platform''s own (projects, shared rows).';
COMMENT ON COLUMN audit_events.before IS 'For a change of a project, membership, quota, budget or credential binding: the value before.';
COMMENT ON COLUMN audit_events.after IS 'The value after (NULL when removed).';
UPDATE audit_events SET project_id = '00000000-0000-4000-8000-000000000001';

-- Credentials bound: which login users and addresses may use them.
ALTER TABLE credentials ADD COLUMN allowed_users text[],
                        ADD COLUMN allowed_cidrs text[];
COMMENT ON COLUMN credentials.allowed_users IS 'Login users a host may use with this credential; NULL: any.';
COMMENT ON COLUMN credentials.allowed_cidrs IS 'CIDRs a host address must lie in to use this credential; NULL: any (the global allow list still applies).';

CREATE TABLE project_spend (
    project_id     uuid PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    month          date NOT NULL,
    spend          numeric(14, 2) NOT NULL,
    burn_per_hour  numeric(14, 4) NOT NULL,
    forecast       numeric(14, 2) NOT NULL,
    exhausted      boolean NOT NULL,
    computed_at    timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE project_spend IS 'Each project''s spend this month, by the cost report''s formula, as the budget pass last computed it (every GPUFLEET_BUDGET_INTERVAL seconds).';
COMMENT ON COLUMN project_spend.project_id IS 'The project.';
COMMENT ON COLUMN project_spend.month IS 'First day of the UTC month the figures are for.';
COMMENT ON COLUMN project_spend.spend IS 'Month-to-date spend: compute + storage + data movement + overhead (failed and retried work is part of it).';
COMMENT ON COLUMN project_spend.burn_per_hour IS 'The current burn rate: the spend of the last 24 hours (or of the month so far when shorter) per hour.';
COMMENT ON COLUMN project_spend.forecast IS 'spend + burn_per_hour × the hours left in the month.';
COMMENT ON COLUMN project_spend.exhausted IS 'spend reached the monthly budget (refuse_new and stop_idle act on it).';
COMMENT ON COLUMN project_spend.computed_at IS 'When the pass computed it.';

-- Changes of projects and memberships wake the replicas' caches of them.
CREATE FUNCTION projects_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('gpufleet_projects', '');
    RETURN NULL;
END $$;
CREATE TRIGGER projects_notify AFTER INSERT OR UPDATE OR DELETE ON projects
    FOR EACH STATEMENT EXECUTE FUNCTION projects_notify();
CREATE TRIGGER project_members_notify AFTER INSERT OR UPDATE OR DELETE ON project_members
    FOR EACH STATEMENT EXECUTE FUNCTION projects_notify();
COMMENT ON FUNCTION projects_notify() IS 'NOTIFY gpufleet_projects when projects or memberships change.';

-- The project an audit row concerns, from its resource, when the writer does not name it.
CREATE FUNCTION audit_project(p_type text, p_id text) RETURNS uuid LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF p_id IS NULL OR p_id !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN
        RETURN NULL;
    END IF;
    RETURN CASE p_type
        WHEN 'project' THEN p_id::uuid
        WHEN 'host' THEN (SELECT project_id FROM hosts WHERE id = p_id::uuid)
        WHEN 'pool' THEN (SELECT project_id FROM pools WHERE id = p_id::uuid)
        WHEN 'credential' THEN (SELECT project_id FROM credentials WHERE id = p_id::uuid)
        WHEN 'brief' THEN (SELECT project_id FROM briefs WHERE id = p_id::uuid)
        WHEN 'stack' THEN (SELECT project_id FROM stacks WHERE id = p_id::uuid)
        WHEN 'webhook' THEN (SELECT project_id FROM webhooks WHERE id = p_id::uuid)
        WHEN 'job' THEN (SELECT h.project_id FROM jobs j JOIN hosts h ON h.id = j.host_id
                          WHERE j.id = p_id::uuid)
        WHEN 'rollout' THEN (SELECT p.project_id FROM rollouts r JOIN pools p ON p.id = r.pool_id
                              WHERE r.id = p_id::uuid)
        ELSE NULL END;
END $$;
COMMENT ON FUNCTION audit_project(text, text) IS 'The project of an audited resource (by type and id), or NULL.';
