-- Owned pending marks: each mark of survey_rollup_pending names the service process that added it
-- (`owner`), so that a process can take over the marks another one left when it stopped or died,
-- and only those (docs/architecture.md, "Pending marks and their owners";
-- src/responses/rollups/owners.ts). Marks still sum per slice for every reader; they also sum per
-- owner. Marks added before this migration, and those of `seed` and `rollups rebuild`, have the
-- nil owner: no process takes them over (`tallyhouse rollups rebuild` clears them).
ALTER TABLE survey_rollup_pending ADD COLUMN IF NOT EXISTS owner UUID, MODIFY ORDER BY (org_id, survey_id, hour, owner);

-- The service processes that add marks: one row per heartbeat, the newest wins. `machine` (host
-- name, boot id, pid namespace) says where `pid` can be checked: a process on the same machine
-- whose pid is gone (or runs another program since `pid_start`) is dead. `state` only moves
-- forward: running -> stopped (its drain ended: it adds no mark any more) -> taken_over (its
-- marks were recomputed and taken back by another process).
CREATE TABLE IF NOT EXISTS survey_rollup_owners
(
    owner       UUID,
    machine     String,
    pid         UInt32,
    pid_start   String,
    started     DateTime64(3, 'UTC'),
    seen        DateTime64(3, 'UTC'),
    state       Enum8('running' = 1, 'stopped' = 2, 'taken_over' = 3)
)
ENGINE = ReplacingMergeTree(seen)
ORDER BY owner
TTL toDateTime(seen) + INTERVAL 30 DAY;
