-- Dense user numbers (src/events/user-numbers.ts; the protocol: docs/architecture.md, "Dense user
-- numbers"). Each known user of an organization gets a UInt32 from a log of claims: a row (org,
-- user, num) per proposal, read in (block, num) order; a claim is valid when it is the first claim
-- of its number and its user has no earlier valid claim. The block number orders the claims
-- (commit order on one MergeTree; claims.ts). Never deleted: a number stays allocated, also to a
-- deleted user. On a cluster the table is sharded by organization like the events: one
-- organization's claims all live in one local table, which is the one log its numbers come from.
CREATE TABLE IF NOT EXISTS event_user_numbers
(
    org_id UUID,
    user_id UUID,
    num UInt32,
    claimed_at DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = MergeTree
ORDER BY (org_id, user_id)
SETTINGS enable_block_number_column = 1;

-- The known user's number on every event, 0 on anonymous events (each has its own random user
-- id: unique users count them one each). The service writes it; schema/231 fills existing rows.
ALTER TABLE events ADD COLUMN IF NOT EXISTS user_num UInt32 DEFAULT 0;
