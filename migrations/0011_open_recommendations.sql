-- 0011_open_recommendations: the recommendations that held at the idle policy's last
-- pass, so that each pass can tell which are new (recommendation.opened) and which no
-- longer hold (recommendation.withdrawn) on the event stream.

CREATE TABLE open_recommendations (
    id        uuid PRIMARY KEY,
    action    text NOT NULL,
    pool_id   uuid,
    host_id   uuid,
    doc       jsonb NOT NULL CHECK (jsonb_typeof(doc) = 'object'),
    opened_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE open_recommendations IS 'Recommendations open at the last pass of the idle policy (api/idle_policy.c), by their stable id; the difference with the next pass is streamed as recommendation.opened and recommendation.withdrawn events.';
COMMENT ON COLUMN open_recommendations.id IS 'The recommendation''s stable id (GET /v1/recommendations).';
COMMENT ON COLUMN open_recommendations.action IS 'stop, scale_up, scale_down, reuse or investigate.';
COMMENT ON COLUMN open_recommendations.pool_id IS 'The target pool, for the stream''s pool filter.';
COMMENT ON COLUMN open_recommendations.host_id IS 'The first target host, for the stream''s host filter.';
COMMENT ON COLUMN open_recommendations.doc IS 'The recommendation as it was when it opened.';
COMMENT ON COLUMN open_recommendations.opened_at IS 'When a pass first saw it.';
