-- 0001_core: audit trail and idempotency records, shared by every resource.

CREATE TABLE audit_events (
    seq           bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    at            timestamptz NOT NULL DEFAULT now(),
    principal     text NOT NULL CHECK (length(principal) BETWEEN 1 AND 128),
    role          text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin', 'reporter')),
    action        text NOT NULL CHECK (action ~ '^[a-z_]+\.[a-z_]+$'),
    resource_type text NOT NULL CHECK (resource_type ~ '^[a-z_]+$'),
    resource_id   text,
    method        text NOT NULL,
    path          text NOT NULL,
    status        integer NOT NULL CHECK (status BETWEEN 100 AND 599),
    request_id    text NOT NULL
);
CREATE INDEX audit_events_principal_seq ON audit_events (principal, seq);
CREATE INDEX audit_events_resource_seq ON audit_events (resource_type, resource_id, seq);
CREATE INDEX audit_events_at ON audit_events (at);

COMMENT ON TABLE audit_events IS 'One row per mutating API call (or denied attempt), written in the same transaction as the change it records.';
COMMENT ON COLUMN audit_events.seq IS 'Monotonic insertion order; the keyset for pagination (newest first).';
COMMENT ON COLUMN audit_events.id IS 'Public identifier of the event.';
COMMENT ON COLUMN audit_events.at IS 'When the call was made (transaction time).';
COMMENT ON COLUMN audit_events.principal IS 'The JWT sub of the caller.';
COMMENT ON COLUMN audit_events.role IS 'The role claim the caller presented.';
COMMENT ON COLUMN audit_events.action IS 'What was done, as resource.verb (e.g. gpu_model.create).';
COMMENT ON COLUMN audit_events.resource_type IS 'Kind of resource acted on (e.g. gpu_model).';
COMMENT ON COLUMN audit_events.resource_id IS 'Identifier of the resource acted on, when there is one.';
COMMENT ON COLUMN audit_events.method IS 'HTTP method of the call.';
COMMENT ON COLUMN audit_events.path IS 'Request path (no query string, which may carry filters only).';
COMMENT ON COLUMN audit_events.status IS 'HTTP status the call answered.';
COMMENT ON COLUMN audit_events.request_id IS 'X-Request-Id of the call, to join with access logs.';

CREATE TABLE idempotency_keys (
    principal     text NOT NULL,
    key           text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    method        text NOT NULL,
    path          text NOT NULL,
    request_hash  text NOT NULL CHECK (request_hash ~ '^[0-9a-f]{64}$'),
    state         text NOT NULL CHECK (state IN ('pending', 'done')),
    status        integer,
    location      text,
    content_type  text,
    body          text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (principal, key)
);
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);

COMMENT ON TABLE idempotency_keys IS 'First answers to POSTs sent with an Idempotency-Key, replayed for 24 hours.';
COMMENT ON COLUMN idempotency_keys.principal IS 'JWT sub of the caller; keys are scoped per principal.';
COMMENT ON COLUMN idempotency_keys.key IS 'The Idempotency-Key header value.';
COMMENT ON COLUMN idempotency_keys.method IS 'HTTP method of the first request.';
COMMENT ON COLUMN idempotency_keys.path IS 'Path of the first request.';
COMMENT ON COLUMN idempotency_keys.request_hash IS 'SHA-256 of method, path and body of the first request; a different request under the same key is refused.';
COMMENT ON COLUMN idempotency_keys.state IS 'pending while the first request runs, done once its answer is stored.';
COMMENT ON COLUMN idempotency_keys.status IS 'HTTP status of the first answer.';
COMMENT ON COLUMN idempotency_keys.location IS 'Location header of the first answer, if any.';
COMMENT ON COLUMN idempotency_keys.content_type IS 'Content-Type of the first answer.';
COMMENT ON COLUMN idempotency_keys.body IS 'Body of the first answer.';
COMMENT ON COLUMN idempotency_keys.created_at IS 'When the key was first seen; rows older than 24 h are purged.';
