-- 0004_credentials_pools: SSH credentials (encrypted at rest) and host pools.

CREATE TABLE credentials (
    seq         bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id          uuid PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 128),
    key_type    text NOT NULL CHECK (key_type IN ('ssh-ed25519', 'ecdsa-sha2-nistp256',
                                                  'ecdsa-sha2-nistp384', 'ecdsa-sha2-nistp521',
                                                  'ssh-rsa')),
    fingerprint text NOT NULL CHECK (fingerprint ~ '^SHA256:[A-Za-z0-9+/]{43}$'),
    kid         text NOT NULL CHECK (kid ~ '^[0-9a-f]{16}$'),
    nonce       bytea NOT NULL CHECK (length(nonce) = 12),
    ciphertext  bytea NOT NULL CHECK (length(ciphertext) > 16),
    created_by  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX credentials_name_pattern ON credentials (name text_pattern_ops);

COMMENT ON TABLE credentials IS 'SSH private keys used to log in to hosts, encrypted at rest with AES-256-GCM (PRODUCT.md §4). Never returned by the API, never logged.';
COMMENT ON COLUMN credentials.seq IS 'Creation order; the keyset for pagination.';
COMMENT ON COLUMN credentials.id IS 'Public identifier; chosen by the server before encryption because it is the AES-GCM additional authenticated data, so a ciphertext cannot be moved to another row.';
COMMENT ON COLUMN credentials.name IS 'Unique human name.';
COMMENT ON COLUMN credentials.key_type IS 'SSH key type of the public key (ssh-ed25519, ecdsa-sha2-nistp256/384/521, ssh-rsa).';
COMMENT ON COLUMN credentials.fingerprint IS 'SHA256 fingerprint of the public key blob, as ssh-keygen -l prints it.';
COMMENT ON COLUMN credentials.kid IS 'Id of the data key that sealed the row: first 8 bytes of SHA-256 of the key derived from the master key, hex. Lets a key rotation find the rows to re-seal.';
COMMENT ON COLUMN credentials.nonce IS 'The 12-byte AES-GCM nonce, random and fresh for every record.';
COMMENT ON COLUMN credentials.ciphertext IS 'AES-256-GCM ciphertext of the OpenSSH private key text, followed by the 16-byte tag.';
COMMENT ON COLUMN credentials.created_by IS 'JWT sub of the creator.';
COMMENT ON COLUMN credentials.created_at IS 'When the credential was stored.';

CREATE TABLE pools (
    seq          bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name         text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 128),
    gpu_model    text NOT NULL REFERENCES gpu_models (key) ON DELETE RESTRICT,
    revision     integer NOT NULL DEFAULT 1 CHECK (revision >= 1),
    gate_version integer NOT NULL DEFAULT 1 CHECK (gate_version >= 1),
    spec         json NOT NULL CHECK (json_typeof(spec) = 'object'),
    created_by   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX pools_gpu_model_seq ON pools (gpu_model, seq);
CREATE INDEX pools_name_pattern ON pools (name text_pattern_ops);

COMMENT ON TABLE pools IS 'Host pools: hosts of one type, with the expected GPUs and interconnect, prices, idle policy, stop command, storage paths and gate thresholds (PRODUCT.md §4).';
COMMENT ON COLUMN pools.seq IS 'Creation order; the keyset for pagination.';
COMMENT ON COLUMN pools.id IS 'Public identifier.';
COMMENT ON COLUMN pools.name IS 'Unique human name (copy of spec.name, for filtering and uniqueness).';
COMMENT ON COLUMN pools.gpu_model IS 'Expected GPU model, a key of the gpu_models catalog (copy of spec.gpu_model).';
COMMENT ON COLUMN pools.revision IS 'Starts at 1; each accepted PUT adds 1.';
COMMENT ON COLUMN pools.gate_version IS 'Version of the gate definition: starts at 1 and grows by 1 whenever a PUT changes spec.gate, so gate runs can say which definition they ran.';
COMMENT ON COLUMN pools.spec IS 'The validated pool document (PoolInput with defaults filled in), compact JSON text served back byte for byte.';
COMMENT ON COLUMN pools.created_by IS 'JWT sub of the creator.';
COMMENT ON COLUMN pools.created_at IS 'When the pool was created.';
COMMENT ON COLUMN pools.updated_at IS 'When the pool last changed.';
