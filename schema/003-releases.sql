-- Releases, listed per organization by released_at (dashboards mark them on time series).
--
-- Engine: MergeTree keyed (org_id, released_at, id): the list endpoint reads one organization's
-- releases newest first, optionally in a released_at window, which is a prefix range of the key.
-- Releases are few; no partitioning is needed. Tags are low-cardinality labels.
CREATE TABLE IF NOT EXISTS releases
(
    org_id       UUID,
    released_at  DateTime64(3, 'UTC'),
    id           UUID,
    name         String,
    description  String CODEC(ZSTD(3)),
    version      String,
    tags         Array(LowCardinality(String)),
    created_at   DateTime64(3, 'UTC')
)
ENGINE = MergeTree
ORDER BY (org_id, released_at, id);
