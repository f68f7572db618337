/**
 * A table's block log: which parts and blocks were committed above a watermark. The claims
 * (claims.ts: message ids, Idempotency-Keys, survey-response identities) and the user numbers
 * (src/events/user-numbers.ts) both read their table this way.
 *
 * The invariant. On one plain (non-replicated) MergeTree table of one node, the engine numbers
 * each INSERT's part when it commits it, under its parts lock, atomically with making it visible:
 * block order is commit order. `enable_block_number_column = 1` keeps the number on each row
 * (`_block_number`) through merges. So a read that sees a row of block b sees every row committed
 * before it, and the highest block a read saw is a watermark W of what it read: every row
 * committed with a block number up to W was visible to it, and what was committed since has a
 * block above W (`committedAbove`). A replicated table (CLICKHOUSE_REPLICATED) allocates block
 * numbers before commit, and a Distributed table's shards number their blocks each on its own:
 * there block order is not commit order across the table (claims.ts says what each user does then).
 */
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';

/**
 * The highest block number of a row's part, read from the part's name
 * (`<partition>_<min block>_<max block>_<level>[_<mutation>]`; no partition id of these tables holds
 * a '_'). A condition on it selects parts before any row is read, and it is the name of the part
 * the read really sees: a list of names read from system.parts first could name parts that a merge
 * replaced before the read started, and miss their rows.
 */
export const PART_TOP = "toUInt64(splitByChar('_', _part)[3])";

/** SQL: the row was committed above the watermark `w` (a UInt64 placeholder); its part is pruned first. */
export const committedAbove = (w: string) => `${PART_TOP} > ${w} AND _block_number > ${w}`;

/**
 * The parts list read after every flush (`freshPartsAbove`: the claims' `ownPartsOnly`, and the
 * user numbers' `applyIfAlone`) is planned with the older query analyzer: ~0.3-0.4 ms less engine
 * CPU a read, the same rows (bench/ingest/README.md, 2026-11-27).
 */
export const PARTS_LIST_SETTINGS: ClickHouseSettings = { allow_experimental_analyzer: 0 };

/**
 * The active parts of a table of the current database (`partsAbove` reads it; the values are
 * parameters): its columns as they are, with no condition on them. The engine builds every active
 * part's row before any WHERE on its columns, so the block condition is applied by the caller: a
 * condition on `max_block_number` and `toString` of the block numbers cost ~0.35 ms of engine
 * CPU a read more than the rows they leave out (bench/ingest/README.md, 2026-11-27 16:44).
 */
const ACTIVE_PARTS = `SELECT partition_id, level, min_block_number, max_block_number FROM system.parts
  WHERE database = currentDatabase() AND table = {t:String} AND active`;

/** A row of `partsAbove`. */
export interface PartRow {
  partition: string;
  level: number;
  min: bigint;
  max: bigint;
}

/**
 * The active parts of `table` (of the current database) whose highest block is above `from`: one
 * read of the parts list, one snapshot of it.
 */
export async function partsAbove(client: ClickHouseClient, table: string, from: bigint): Promise<PartRow[]> {
  const rs = await client.query({ query: ACTIVE_PARTS, query_params: { t: table }, format: 'TabSeparated', clickhouse_settings: PARTS_LIST_SETTINGS });
  const text = await rs.text();
  const parts: PartRow[] = [];
  if (text === '') return parts;
  for (const line of text.slice(0, -1).split('\n')) {
    const [partition, level, min, max] = line.split('\t');
    const top = BigInt(max);
    if (top > from) parts.push({ partition, level: Number(level), min: BigInt(min), max: top });
  }
  return parts;
}

/**
 * Whether the parts list alone says that a writer whose one INSERT made exactly `count` parts
 * (one per partition, in `partitions` when given) above `from` was alone since `from`: every
 * active part above `from` is then a fresh one (level 0, one block) of a distinct partition (of
 * `partitions`), and there are `count` of them. The writer's parts are among them (committed
 * after `from` was read), so they are all its own: the first and the highest of their blocks.
 * Anything else (another writer's part, a merge that already took one of them): undefined, and
 * the caller reads the rows above `from`.
 */
export async function freshPartsAbove(
  client: ClickHouseClient,
  table: string,
  from: bigint,
  { count, partitions }: { count: number; partitions?: ReadonlySet<string> },
): Promise<{ first: bigint; top: bigint } | undefined> {
  const parts = await partsAbove(client, table, from);
  if (parts.length !== count) return undefined;
  const seen = new Set<string>();
  let first: bigint | undefined;
  let top = from;
  for (const { partition, level, min, max } of parts) {
    if (level !== 0 || min !== max || (partitions && !partitions.has(partition)) || seen.has(partition)) return undefined;
    seen.add(partition);
    if (first === undefined || max < first) first = max;
    if (max > top) top = max;
  }
  return first === undefined ? undefined : { first, top };
}

/** The highest block number of the active parts of `table` (of the current database); 0: none. */
export async function topBlock(client: ClickHouseClient, table: string): Promise<bigint> {
  const rs = await client.query({
    query: 'SELECT toString(max(max_block_number)) FROM system.parts WHERE database = currentDatabase() AND table = {t:String} AND active',
    query_params: { t: table },
    format: 'TabSeparated',
  });
  const text = (await rs.text()).trim();
  return BigInt(text || '0');
}
