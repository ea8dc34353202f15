-- 0024_event_ticket_grants: a ticket for GET /v1/events?ticket= stands for the principal
-- that minted it, projects included: what its token said (the projects it names, the role
-- map's @project entries, whether it is a platform admin). On redeem the grants are
-- resolved from these claims and the subject's memberships as for a bearer token, so a
-- stream opened with a ticket sees exactly what the minting request could see.

ALTER TABLE event_tickets ADD COLUMN principal jsonb NOT NULL DEFAULT '{}'::jsonb
    CHECK (jsonb_typeof(principal) = 'object');
ALTER TABLE event_tickets ALTER COLUMN principal DROP DEFAULT;
COMMENT ON COLUMN event_tickets.principal IS 'The minting principal''s claims: {"platform_admin": bool, "from_idp": bool, "claims": [{"project": name, "role": role}]}; a ticket without it (minted before projects) acts on the project named default.';

-- A token that names only projects has no role of its own ("none"); a reporter's role
-- claim may come with a readable project.
ALTER TABLE event_tickets DROP CONSTRAINT event_tickets_role_check;
ALTER TABLE event_tickets ADD CONSTRAINT event_tickets_role_check
    CHECK (role IN ('viewer', 'operator', 'admin', 'reporter', 'none'));
COMMENT ON COLUMN event_tickets.role IS 'The principal''s own role claim (none when its token names only projects); the grants come from principal.';
