-- 0003_briefs_stacks: workload briefs and pinned software stacks.

CREATE TABLE briefs (
    seq         bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 128),
    kind        text NOT NULL CHECK (kind IN ('inference_interactive', 'inference_batch', 'training',
                                               'fine_tuning', 'embeddings', 'distributed_serving')),
    revision    integer NOT NULL DEFAULT 1 CHECK (revision >= 1),
    spec        json NOT NULL CHECK (json_typeof(spec) = 'object'),
    created_by  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX briefs_kind_seq ON briefs (kind, seq);
CREATE INDEX briefs_name_pattern ON briefs (name text_pattern_ops);

COMMENT ON TABLE briefs IS 'Workload briefs: the one-page description of a job, written before hardware is chosen (PRODUCT.md §1).';
COMMENT ON COLUMN briefs.seq IS 'Creation order; the keyset for pagination.';
COMMENT ON COLUMN briefs.id IS 'Public identifier.';
COMMENT ON COLUMN briefs.name IS 'Human name (copy of spec.name, for filtering).';
COMMENT ON COLUMN briefs.kind IS 'Workload kind (copy of spec.kind, for filtering).';
COMMENT ON COLUMN briefs.revision IS 'Starts at 1; each accepted PUT adds 1.';
COMMENT ON COLUMN briefs.spec IS 'The validated brief document (BriefInput), compact JSON text; json, not jsonb, so that it is served back byte for byte.';
COMMENT ON COLUMN briefs.created_by IS 'JWT sub of the creator.';
COMMENT ON COLUMN briefs.created_at IS 'When the brief was created.';
COMMENT ON COLUMN briefs.updated_at IS 'When the brief last changed.';

CREATE TABLE stacks (
    seq           bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name          text NOT NULL CHECK (length(name) BETWEEN 1 AND 128),
    framework     text NOT NULL,
    image_digest  text NOT NULL CHECK (image_digest ~ '^sha256:[0-9a-f]{64}$'),
    supersedes    uuid REFERENCES stacks (id) ON DELETE RESTRICT,
    spec          json NOT NULL CHECK (json_typeof(spec) = 'object'),
    warnings      json NOT NULL DEFAULT '[]' CHECK (json_typeof(warnings) = 'array'),
    created_by    text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX stacks_framework_seq ON stacks (framework, seq);
CREATE INDEX stacks_name_pattern ON stacks (name text_pattern_ops);
CREATE INDEX stacks_supersedes ON stacks (supersedes);

COMMENT ON TABLE stacks IS 'Pinned software stacks (PRODUCT.md §3). Immutable: a change is a new row that supersedes the old one.';
COMMENT ON COLUMN stacks.seq IS 'Creation order; the keyset for pagination.';
COMMENT ON COLUMN stacks.id IS 'Public identifier.';
COMMENT ON COLUMN stacks.name IS 'Human name (copy of spec.name).';
COMMENT ON COLUMN stacks.framework IS 'Framework name (copy of spec.framework.name, for filtering).';
COMMENT ON COLUMN stacks.image_digest IS 'The container image digest the stack pins (sha256:...).';
COMMENT ON COLUMN stacks.supersedes IS 'The stack this one replaces; rolling back means pointing a host at it again.';
COMMENT ON COLUMN stacks.spec IS 'The validated stack document (StackInput), compact JSON text served back byte for byte.';
COMMENT ON COLUMN stacks.warnings IS 'Accepted-with-warning findings, e.g. CUDA running through minor version compatibility.';
COMMENT ON COLUMN stacks.created_by IS 'JWT sub of the creator.';
COMMENT ON COLUMN stacks.created_at IS 'When the stack was recorded.';

-- Immutability is a property of the data, not only of the API.
CREATE FUNCTION stacks_refuse_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'stacks are immutable; create a new stack that supersedes %', OLD.id
        USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER stacks_immutable BEFORE UPDATE ON stacks
    FOR EACH ROW EXECUTE FUNCTION stacks_refuse_update();
COMMENT ON FUNCTION stacks_refuse_update() IS 'Refuses every UPDATE of stacks.';
