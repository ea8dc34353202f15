-- 0025_tokens: the tokens gpufleetd minted (gpufleetd token records each one's jti with
-- its expiry) and the revocation list (POST /v1/tokens/revoke): a token is refused when
-- its jti is listed, or when its subject is listed and the token was issued at or before
-- that entry's issued_before. Every replica holds the unexpired entries in memory and
-- reloads them when version moves (it polls the one-row table every
-- GPUFLEET_TOKEN_REVOCATION_REFRESH_SECONDS); a revocation bumps it in its transaction.
-- Both tables are pruned once their rows have expired (a listed token cannot verify past
-- its exp anyway).

CREATE TABLE tokens (
    jti text PRIMARY KEY CHECK (jti ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'),
    sub text NOT NULL CHECK (length(sub) BETWEEN 1 AND 128),
    role text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin', 'reporter')),
    project text CHECK (project IS NULL OR length(project) BETWEEN 1 AND 63),
    issued_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL CHECK (expires_at > issued_at)
);
CREATE INDEX tokens_sub ON tokens (sub, expires_at);
CREATE INDEX tokens_expires_at ON tokens (expires_at);
COMMENT ON TABLE tokens IS 'Tokens minted by gpufleetd token: jti, subject, role, project, lifetime (no token text). Pruned after expires_at.';

CREATE TABLE token_revocations (
    id bigserial PRIMARY KEY,
    jti text CHECK (jti ~ '^[\x21-\x7e]{1,128}$'),
    sub text CHECK (length(sub) BETWEEN 1 AND 128),
    issued_before timestamptz,
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz NOT NULL DEFAULT now(),
    revoked_by text NOT NULL,
    reason text CHECK (reason IS NULL OR length(reason) <= 500),
    CHECK ((jti IS NOT NULL AND sub IS NULL AND issued_before IS NULL)
        OR (jti IS NULL AND sub IS NOT NULL AND issued_before IS NOT NULL))
);
CREATE UNIQUE INDEX token_revocations_jti ON token_revocations (jti) WHERE jti IS NOT NULL;
CREATE UNIQUE INDEX token_revocations_sub ON token_revocations (sub) WHERE sub IS NOT NULL;
CREATE INDEX token_revocations_expires_at ON token_revocations (expires_at);
COMMENT ON TABLE token_revocations IS 'Revoked tokens: one jti, or every token of a subject issued at or before issued_before. Kept until expires_at (no token it names can still be valid), then pruned.';

CREATE TABLE token_revocation_version (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    version bigint NOT NULL
);
INSERT INTO token_revocation_version (one, version) VALUES (true, 0);
COMMENT ON TABLE token_revocation_version IS 'Bumped by every revocation: replicas poll it and reload token_revocations when it moves.';
