-- API tokens. Only the SHA-256 of a token is stored; the token itself is shown once when minted.
--
-- Engine: ReplacingMergeTree(version) keyed by id: revoking inserts a newer version of the row
-- with revoked_at set, and reads use FINAL. The table holds one row per token, so FINAL and a
-- lookup by token_hash without an index stay cheap; the service caches lookups (TOKEN_CACHE_TTL_MS).
CREATE TABLE IF NOT EXISTS api_tokens
(
    id          UUID,
    org_id      UUID,
    token_hash  String,
    scopes      Array(LowCardinality(String)),
    name        String,
    created_at  DateTime64(3, 'UTC'),
    revoked_at  Nullable(DateTime64(3, 'UTC')),
    version     UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY id;
