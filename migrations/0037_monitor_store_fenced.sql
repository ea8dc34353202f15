-- 0037_monitor_store_fenced: one statement for many monitor samples (issue 28, item 1).
-- A sample used to be five round trips (BEGIN, the lease fence, monitor_store, the host's
-- state, COMMIT), one transaction per host. monitor_store_fenced does the fence, the store
-- and the state read of each sample of a group in one call, and the monitor commits the
-- samples of many hosts together (a short group-commit window on its writer:
-- provisioner/monitor/monitor_group.c). Each sample is still fenced by its own lease: a
-- sample whose host this worker no longer owns (or whose worker's lease lapsed) is not
-- stored and changes nothing; the others of the group are stored. The policy's state
-- changes (planner/monitor_policy.h) are still applied by the monitor in the same
-- transaction, through host_transition().

CREATE FUNCTION monitor_store_fenced(p_owner text, p_hosts uuid[], p_docs jsonb)
RETURNS TABLE (o_i integer, o_fenced boolean, o_result text, o_state text, o_held boolean,
               o_back text)
LANGUAGE plpgsql AS $$
DECLARE
    k integer;
    v_host uuid;
BEGIN
    IF p_owner IS NULL OR p_hosts IS NULL OR p_docs IS NULL
       OR jsonb_typeof(p_docs) IS DISTINCT FROM 'array'
       OR cardinality(p_hosts) <> jsonb_array_length(p_docs) THEN
        RAISE EXCEPTION 'monitor_store_fenced: an owner, and as many documents as hosts'
            USING ERRCODE = '22023';
    END IF;
    -- the hosts in the order of their ids: two groups (or a group and a claim) lock the
    -- rows in one order
    FOR k IN SELECT u.o FROM unnest(p_hosts) WITH ORDINALITY u(h, o) ORDER BY u.h, u.o LOOP
        v_host := p_hosts[k];
        o_i := k;
        o_result := NULL;
        o_state := NULL;
        o_held := NULL;
        o_back := NULL;
        -- the fence: the host's lease is this worker's and the worker's lease is live (the
        -- row stays locked until the transaction ends, as mon_fence did)
        PERFORM 1 FROM host_monitor m JOIN monitor_workers w ON w.owner = m.owner
         WHERE m.host_id = v_host AND m.owner = p_owner AND w.lease_until > now()
           FOR UPDATE OF m;
        o_fenced := NOT FOUND;
        IF NOT o_fenced THEN
            o_result := monitor_store(v_host, p_docs -> (k - 1))::text;
            SELECT h.state, h.quarantined_at IS NOT NULL INTO o_state, o_held
              FROM hosts h WHERE h.id = v_host FOR UPDATE;
            IF o_state = 'unreachable' THEN
                SELECT x.from_state INTO o_back FROM host_state_history x
                 WHERE x.host_id = v_host AND x.to_state = 'unreachable'
                 ORDER BY x.id DESC LIMIT 1;
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;
COMMENT ON FUNCTION monitor_store_fenced(text, uuid[], jsonb) IS 'The monitor''s samples of a group (p_docs[i] of host p_hosts[i+1]), each fenced by its host''s lease held by p_owner: one row per sample, o_i its position (1-based); o_fenced when the lease is not p_owner''s (nothing stored), else o_result is monitor_store''s answer and o_state, o_held, o_back the host''s state, its quarantine hold and, when unreachable, the state it had before. An invalid document fails the whole call (the monitor then stores the group''s samples one by one).';
