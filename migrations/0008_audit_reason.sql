-- 0008_audit_reason: an optional free-text reason given by the caller (e.g. why a host
-- was stopped: POST /v1/hosts/{id}/stop {reason}).

ALTER TABLE audit_events ADD COLUMN reason text CHECK (length(reason) BETWEEN 1 AND 500);

COMMENT ON COLUMN audit_events.reason IS 'Why, in the caller''s words, when the action takes a reason (host.stop); NULL otherwise.';
