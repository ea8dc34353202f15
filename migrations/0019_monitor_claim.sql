-- 0019_monitor_claim: the monitor's claim at fleet scale (bench/monitor, issue 13 item 8).
--
-- A worker used to renew the lease of every host it held, row by row, every claim period
-- (2 s): with 1,000 hosts that is 500 row updates a second, more WAL than the samples
-- themselves, and it read back every host it held, whole, every period. Now:
--   * a worker's lease is its own row in monitor_workers (lease_until), renewed once a
--     period; a host is held while its owner's lease lasts. host_monitor.lease_until only
--     matters for a host without an owner: no worker takes it before then (a worker that
--     stopped or gave it away may still be finishing a sample of it);
--   * host_monitor.seen_config is a digest of the host's monitoring configuration as its
--     owner last read it: the claim reads back only the hosts whose digest changed (and
--     every host when the worker asks for a full read: at its start and after a failed
--     claim or a count that does not add up).

ALTER TABLE monitor_workers ADD COLUMN lease_until timestamptz NOT NULL DEFAULT now();
-- workers running across the upgrade keep the 6 s (three 2 s periods) their hosts had
UPDATE monitor_workers SET lease_until = seen_at + interval '6 seconds';
COMMENT ON COLUMN monitor_workers.lease_until IS 'The worker''s lease (three claim periods after its last claim): every host it owns is its own until then; after it, other workers take them over.';

ALTER TABLE host_monitor ADD COLUMN seen_config text CHECK (seen_config ~ '^[0-9a-f]{32}$');
COMMENT ON COLUMN host_monitor.seen_config IS 'md5 of the host''s monitoring configuration (address, port, user, credential, host key, state, hold, pool settings, GPU model) as its owner last read it; the claim reads back a host only when it differs. NULL: not read by its owner yet.';
COMMENT ON COLUMN host_monitor.lease_until IS 'For a host without an owner: no worker takes it before this time (the lease of the worker that gave it up). Ignored while the host has an owner (monitor_workers.lease_until counts then).';
