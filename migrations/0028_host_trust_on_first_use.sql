-- 0028: a host registered without a pinned key says so explicitly (issue 25).
-- POST /v1/hosts without host_key_sha256 now needs "trust_on_first_use": true; the choice
-- is kept on the host, and the first contact's audit row (host.key_recorded) names the
-- key it learned.
ALTER TABLE hosts ADD COLUMN trust_on_first_use boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN hosts.trust_on_first_use IS 'The pin is (or will be) learned on first use: registered with "trust_on_first_use": true, or released from quarantine with "repin": true; the key the host presents on the next contact is recorded (audit host.key_recorded, naming it) and pinned from then on. false: host_key_sha256 was given by an operator or admin.';
-- Hosts registered before this migration without a key trusted it on first use implicitly:
-- those still without a key, and those whose key a first contact recorded.
UPDATE hosts h SET trust_on_first_use = true
 WHERE h.host_key_sha256 IS NULL
    OR EXISTS (SELECT 1 FROM audit_events a
                WHERE a.action = 'host.key_recorded' AND a.resource_type = 'host'
                  AND a.resource_id = h.id::text);
