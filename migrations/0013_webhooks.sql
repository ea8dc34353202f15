-- 0013_webhooks: signed webhooks (Standard Webhooks). Each webhook follows the durable
-- events table from its own position (last_event_id), one event at a time and in id
-- order, delivered by one replica at a time (a lease on the row, taken with FOR UPDATE
-- SKIP LOCKED). Every event sent to a webhook gets a delivery row with its attempts.

CREATE TABLE webhooks (
    seq             bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id              uuid PRIMARY KEY,
    url             text NOT NULL CHECK (length(url) BETWEEN 8 AND 2048 AND url ~ '^https?://'),
    event_types     text[] NOT NULL CHECK (cardinality(event_types) >= 1
                                           AND array_position(event_types, NULL) IS NULL),
    description     text NOT NULL DEFAULT '' CHECK (length(description) <= 500),
    format          text NOT NULL DEFAULT 'standard' CHECK (format IN ('standard', 'slack')),
    secret_kid      text NOT NULL CHECK (secret_kid ~ '^[0-9a-f]{16}$'),
    secret_nonce    bytea NOT NULL CHECK (length(secret_nonce) = 12),
    secret_ciphertext bytea NOT NULL CHECK (length(secret_ciphertext) > 16),
    enabled         boolean NOT NULL DEFAULT true,
    disabled_reason text CHECK (length(disabled_reason) <= 1024),
    disabled_at     timestamptz,
    last_event_id   bigint NOT NULL CHECK (last_event_id >= 0),
    generation      bigint NOT NULL DEFAULT 1 CHECK (generation >= 1),
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    lease_owner     uuid,
    lease_until     timestamptz,
    created_by      text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CHECK (enabled = (disabled_at IS NULL))
);
-- The dispatchers' claim: enabled webhooks whose next attempt is due.
CREATE INDEX webhooks_due ON webhooks (next_attempt_at) WHERE enabled;

COMMENT ON TABLE webhooks IS 'Receivers of signed event deliveries (POST /v1/webhooks). The signing secret is stored only sealed with AES-256-GCM, like SSH credentials; it is shown once, when the webhook is created.';
COMMENT ON COLUMN webhooks.seq IS 'Creation order; the keyset for pagination.';
COMMENT ON COLUMN webhooks.id IS 'Public identifier; chosen by the server before sealing the secret, whose AES-GCM additional authenticated data it is.';
COMMENT ON COLUMN webhooks.url IS 'Where events are POSTed: http or https, normalized; its host is a literal address that passed the address policy at creation, or a name checked against the policy at every connection.';
COMMENT ON COLUMN webhooks.event_types IS 'The event types delivered (known types only, checked by the API).';
COMMENT ON COLUMN webhooks.description IS 'Free text for humans.';
COMMENT ON COLUMN webhooks.format IS 'standard: {type, timestamp, data} JSON; slack: {"text": ...} for a Slack incoming webhook. Both are signed.';
COMMENT ON COLUMN webhooks.secret_kid IS 'Id of the data key that sealed the secret (as credentials.kid).';
COMMENT ON COLUMN webhooks.secret_nonce IS 'The 12-byte AES-GCM nonce of the sealed secret.';
COMMENT ON COLUMN webhooks.secret_ciphertext IS 'AES-256-GCM ciphertext of the 32-byte HMAC-SHA256 key, followed by the 16-byte tag.';
COMMENT ON COLUMN webhooks.enabled IS 'False once disabled (persistent failure, or 410 Gone); POST /v1/webhooks/{id}/replay enables it again.';
COMMENT ON COLUMN webhooks.disabled_reason IS 'Why it was disabled (bounded, valid UTF-8).';
COMMENT ON COLUMN webhooks.disabled_at IS 'When it was disabled; null while enabled.';
COMMENT ON COLUMN webhooks.last_event_id IS 'The cursor: every matching event up to this id was delivered (or skipped as not matching); the next delivery is the first matching event after it.';
COMMENT ON COLUMN webhooks.generation IS 'Bumped by replay: a dispatcher holding an older generation may no longer record anything for the webhook (fencing).';
COMMENT ON COLUMN webhooks.next_attempt_at IS 'Not claimed before this time (the backoff of a failing delivery).';
COMMENT ON COLUMN webhooks.lease_owner IS 'The dispatcher (one per gpufleetd serve process) delivering to this webhook now, if any.';
COMMENT ON COLUMN webhooks.lease_until IS 'The lease lapses at this time unless renewed; another dispatcher may then take the webhook over.';
COMMENT ON COLUMN webhooks.created_by IS 'JWT sub of the creator.';
COMMENT ON COLUMN webhooks.created_at IS 'When the webhook was created.';
COMMENT ON COLUMN webhooks.updated_at IS 'When it was last disabled or replayed.';

CREATE TABLE webhook_deliveries (
    seq              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id       uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    generation       bigint NOT NULL,
    event_id         bigint NOT NULL,
    event_type       text NOT NULL,
    status           text NOT NULL CHECK (status IN ('retrying', 'delivered', 'failed')),
    attempts         integer NOT NULL CHECK (attempts >= 1),
    first_attempt_at timestamptz NOT NULL,
    last_attempt_at  timestamptz NOT NULL,
    next_attempt_at  timestamptz,
    delivered_at     timestamptz,
    response_code    integer CHECK (response_code BETWEEN 100 AND 999),
    latency_ms       integer CHECK (latency_ms >= 0),
    last_error       text CHECK (length(last_error) <= 1024),
    UNIQUE (webhook_id, generation, event_id)
);
CREATE INDEX webhook_deliveries_list ON webhook_deliveries (webhook_id, seq);

COMMENT ON TABLE webhook_deliveries IS 'One row per event sent to a webhook (per replay generation): its attempts and outcome. Deleted with the webhook.';
COMMENT ON COLUMN webhook_deliveries.seq IS 'Order of first attempts; the keyset for pagination (newest first).';
COMMENT ON COLUMN webhook_deliveries.webhook_id IS 'The webhook.';
COMMENT ON COLUMN webhook_deliveries.generation IS 'The webhook''s generation when the event was sent (a replay sends events again as a new generation).';
COMMENT ON COLUMN webhook_deliveries.event_id IS 'The event (also the webhook-id header, evt_<id>); no foreign key: events expire with GPUFLEET_EVENTS_RETENTION.';
COMMENT ON COLUMN webhook_deliveries.event_type IS 'The event''s type.';
COMMENT ON COLUMN webhook_deliveries.status IS 'retrying: the last attempt failed and another is scheduled; delivered: a 2xx answer; failed: given up (the webhook was disabled).';
COMMENT ON COLUMN webhook_deliveries.attempts IS 'Attempts made so far.';
COMMENT ON COLUMN webhook_deliveries.first_attempt_at IS 'When the first attempt ended; retries stop GPUFLEET_WEBHOOK_RETRY_MAX_SECONDS after it.';
COMMENT ON COLUMN webhook_deliveries.last_attempt_at IS 'When the last attempt ended.';
COMMENT ON COLUMN webhook_deliveries.next_attempt_at IS 'When the next attempt is due (status retrying), else null.';
COMMENT ON COLUMN webhook_deliveries.delivered_at IS 'When a 2xx answer arrived.';
COMMENT ON COLUMN webhook_deliveries.response_code IS 'HTTP status of the last attempt; null when no answer came (connection refused, timeout, address refused).';
COMMENT ON COLUMN webhook_deliveries.latency_ms IS 'Duration of the last attempt, milliseconds.';
COMMENT ON COLUMN webhook_deliveries.last_error IS 'Why the last attempt failed (at most 1024 bytes of valid UTF-8; a bounded, cleaned excerpt of the receiver''s answer at most).';
