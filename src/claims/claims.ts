/**
 * Claims: "this key is taken", stored in a table of the engine, for the three write paths that
 * must store something once per key: event message ids (src/events/message-ids.ts),
 * Idempotency-Keys (src/idempotency/store.ts) and survey-response identities (src/responses/).
 *
 * The rule, one for all of them: a writer inserts its claim, then reads the claims of its keys
 * committed meanwhile; of several claims of one key, the one with the lowest `_block_number`
 * wins. On one (non-replicated) MergeTree table block order is commit order (block-log.ts states
 * why, and what breaks it). A writer
 * that reads after its own commit therefore sees every claim committed before its own: two
 * writers racing on one key (two service instances, a retry reaching another instance while the
 * first attempt is in flight) both end on the same winner, and the loser undoes its write before
 * it answers. `firstClaims` below is that rule. Whoever sees two claims of one key may undo every
 * one but the first (`losers`): the loser's own writer may have died between its commit and its
 * undo, and undoing twice is undoing once.
 *
 * What this module adds: an in-memory view of what is claimed (ClaimView), so that a key need not
 * be looked up to be known new. The view is a Bloom filter (filter.ts), loaded from the table at
 * the first use, then kept current in commit order: a block-number watermark W says every claim
 * committed with a block number up to W is in the filter, and `advance` reads the claims
 * committed after W (every writer's, by block number, never by key: the parts newer than W and
 * their rows above W) into it and moves W. A writer then:
 *   1. asks the filter about its keys: a key it does not hold was not claimed up to W (certain);
 *      the keys it may hold (real repeats, and its false positives) go to a confirming lookup
 *      (`lookup`, by key);
 *   2. adds the keys it will store to the filter and inserts them;
 *   3. advances: the claims committed after W are read; a key of its own that another writer
 *      claimed in a lower block was lost (step 1 could not see claims committed after W), and
 *      the writer undoes its copy. With one writer, step 3 reads only which blocks are new (its
 *      own): no key is read back.
 * The guarantee is the rule's, whatever the filter holds: a key reported absent is absent up to
 * W, and step 3 covers everything after W. The filter's memory only decides how many keys take
 * the lookup: past `maxBytes` (a setting) it saturates and more keys are looked up, never fewer.
 *
 * Cluster mode (CLICKHOUSE_CLUSTER, or an embedded cluster): claims live in per-shard local
 * tables behind a Distributed table, sharded by organization (cluster-ddl.ts), so every claim of
 * one key (the key names its organization) lives on one shard, in one local table. Block numbers
 * are per shard: there is no watermark over the cluster, so the view keeps no filter and never
 * advances; every key is looked up (the organization's shard answers). When that local table is a
 * plain MergeTree (read from the engine at `ready`), its block order is still commit order, and
 * `_block_number` read through the Distributed table is the shard's own (a probe on the embedded
 * cluster, 2026-11-27: the local and the Distributed reads give the same numbers). The writes are
 * synchronous (`distributed_foreground_insert`: the rows are on the shard when the INSERT
 * answers), so the rule holds per organization, read by key instead of by block: a writer reads
 * back the claims of its keys after its INSERT (`readsBack`, `settle`), and the lowest block wins
 * as above. A replicated table (CLICKHOUSE_REPLICATED) allocates block numbers before commit: there
 * the race of two writers storing one key at the same moment is not closed (docs/api.md says so),
 * and the Idempotency-Key claims are ordered by time (schema/011).
 * The three write protocols on this module: docs/architecture.md.
 */
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { hash } from 'node:crypto';
import { forEachFixedRow, RowBinaryReader } from '../clickhouse/rowbinary.ts';
import { committedAbove, freshPartsAbove, PART_TOP, topBlock } from './block-log.ts';
import { localName } from '../clickhouse/cluster-ddl.ts';
import { ParamBag } from '../clickhouse/sql.ts';
import { orgsCondition, type TenantTable } from '../clickhouse/tenant.ts';
import { formatDbDate } from '../time/iso.ts';
import { ClaimFilter, type FilterStats } from './filter.ts';

/** A claim key: 16 bytes, MD5 of the key's parts (claimKey) or a random UUID. */
export type ClaimKey = Buffer;

/**
 * The claim key of a tuple: MD5 of its parts joined by ':' (UUIDs lower-case, as toString of a
 * UUID writes them in SQL, so the engine can compute the same key from the columns).
 */
export function claimKey(...parts: string[]): ClaimKey {
  return hash('md5', parts.join(':'), 'buffer');
}

/** Where a kind of claim lives. Every SQL fragment comes from code, never from input. */
export interface ClaimTable {
  /** The table (`enable_block_number_column = 1`). */
  table: TenantTable;
  /** SQL: the row's claim key, FixedString(16). */
  key: string;
  /** SQL: whether the row is a claim (`1` when every row is). */
  isClaim: string;
  /** SQL: when the claim was made, DateTime64(3). */
  claimedAt: string;
  /** Claims older than this do not count; undefined: claims never expire. */
  windowMs?: number;
  /** SQL given the window start placeholder: a condition every claim in the window meets, for pruning. */
  prune?: (since: string) => string;
  /** SQL: a UUID that names the row (events: event_id): tells a writer's own rows from others'. */
  rowId: string;
  /**
   * Whether `rowId` names the write rather than the row (every row of one INSERT carries the same
   * one, a batch UUID). Descriptive only: `advance` tells own rows by block either way (a marker
   * names one row of each own part).
   */
  rowIdNamesWrite?: boolean;
  /** SQL: a UUID column that narrows a lookup (events: org_id, the sorting key's first column). */
  scope: string;
}

/** A claim row of `advance`'s RowBinary read: block UInt64, key FixedString(16), row id and scope UUIDs, time Int64. */
const CLAIM_ROW_BYTES = 8 + 16 + 16 + 16 + 8;

/**
 * Keys per lookup query. Query parameters travel in the URL, which the engine bounds
 * (`http_max_uri_size`, 1 MiB): a key is ~35 characters there, so a lookup of more keys than
 * this is sent as several queries.
 */
const LOOKUP_KEYS_PER_QUERY = 10_000;

/** A claim read from the table. */
export interface StoredClaim {
  key: ClaimKey;
  rowId: string;
  scope: string;
  block: bigint;
  /** Read by `advance`: whether the filter may have held the key before this read added it. */
  known?: boolean;
}

/** Of several claims per key, the first committed: the lowest block number (the rule above). */
export function firstClaims(claims: Iterable<StoredClaim>): Map<string, StoredClaim> {
  const first = new Map<string, StoredClaim>();
  for (const c of claims) {
    const k = c.key.toString('hex');
    const seen = first.get(k);
    if (!seen || c.block < seen.block) first.set(k, c);
  }
  return first;
}

/** The claims that are not the first of their key (what `firstClaims` leaves out). */
export function losers(claims: readonly StoredClaim[]): StoredClaim[] {
  const first = firstClaims(claims);
  return claims.filter((c) => first.get(c.key.toString('hex'))!.rowId !== c.rowId);
}

export interface AdvanceResult {
  /** The block of each own marker's part (markers whose rows were read). */
  own: Map<string, bigint>;
  /** Claims of other parts committed after the watermark the read started from. */
  others: StoredClaim[];
}

export interface ClaimViewOptions {
  /** Bytes the filter may hold (CLAIM_FILTER_MAX_BYTES); 0: no filter, every key is looked up. */
  maxBytes: number;
  /** Cluster mode: no filter and no advance; claims read back by key on non-replicated shards (see above). */
  clustered: boolean;
}

/** What `settle` read: the claims of the keys, and those that lose to an earlier claim of their key. */
export interface Settled {
  claims: StoredClaim[];
  losers: StoredClaim[];
}

/** The in-memory view of one claim table (see the header). */
export class ClaimView {
  private readonly filter: ClaimFilter;
  private loading: Promise<void> | undefined;
  private mark = -1n;
  /** Cluster mode: whether the shards' local table is a plain MergeTree (block order is commit order); read at `ready`. */
  private shardsOrdered = false;
  private shardsRead: Promise<void> | undefined;

  constructor(
    readonly source: ClaimTable,
    readonly options: ClaimViewOptions,
  ) {
    this.filter = new ClaimFilter(options.clustered ? 0 : options.maxBytes, source.windowMs);
  }

  /** Whether a filter is kept (not in cluster mode, not with a cap of 0). */
  get filtering(): boolean {
    return !this.options.clustered && this.options.maxBytes > 0;
  }

  /** Whether claims can be read in commit order (`advance`): on one server, not through a Distributed table. */
  get ordered(): boolean {
    return !this.options.clustered;
  }

  /**
   * Whether `_block_number` read by key is commit order among the claims of one key: on one
   * server, and on a cluster whose local tables are plain MergeTree (after `ready`).
   */
  get byBlock(): boolean {
    return !this.options.clustered || this.shardsOrdered;
  }

  /** Cluster mode on non-replicated shards (after `ready`): a writer reads its keys back after its INSERT (`settle`). */
  get readsBack(): boolean {
    return this.options.clustered && this.shardsOrdered;
  }

  /** Every claim with a block number up to this is in the filter; -1 before the load. */
  get watermark(): bigint {
    return this.mark;
  }

  /**
   * Loads the claims of the window into the filter (without a filter, only the watermark), once; a
   * failed load is tried again on the next call. Cluster mode: reads whether the shards' local
   * table numbers blocks at commit (`byBlock`, `readsBack`), once.
   */
  ready(client: ClickHouseClient): Promise<void> {
    if (!this.ordered) return this.readShardsOnce(client);
    this.loading ??= this.load(client).catch((err) => {
      this.loading = undefined;
      throw err;
    });
    return this.loading;
  }

  /** Whether the key may have been claimed up to the watermark, or added since; false is certain. */
  mayHold(key: Uint8Array, at = 0): boolean {
    return this.filter.mayHold(key, at);
  }

  /**
   * `mayHold`, then `add`: whether the key may have been claimed (up to the watermark, or added
   * since, by an earlier call of this one included), before this call adds it.
   */
  testAndAdd(key: Uint8Array, claimedAtMs: number, at = 0): boolean {
    return this.filter.testAndAdd(key, claimedAtMs, at);
  }

  /** A key this process is about to claim (before its INSERT, so a concurrent writer of this process sees it). */
  add(key: Uint8Array, claimedAtMs: number, at = 0): void {
    this.filter.add(key, claimedAtMs, at);
  }

  stats(): FilterStats & { watermark: string } {
    return { ...this.filter.stats(), watermark: this.mark.toString() };
  }

  /** The start of the window now (undefined without a window). */
  since(now = Date.now()): Date | undefined {
    return this.source.windowMs === undefined ? undefined : new Date(now - this.source.windowMs);
  }

  /**
   * The claims among `keys` in the window, by key (the confirming lookup). `orgs` narrows the read
   * to the organizations the caller knows every claim of these keys belongs to.
   */
  async lookup(client: ClickHouseClient, keys: readonly ClaimKey[], orgs?: readonly string[]): Promise<StoredClaim[]> {
    if (keys.length <= LOOKUP_KEYS_PER_QUERY) return this.lookupSome(client, keys, orgs);
    const found: StoredClaim[] = [];
    for (let i = 0; i < keys.length; i += LOOKUP_KEYS_PER_QUERY) found.push(...(await this.lookupSome(client, keys.slice(i, i + LOOKUP_KEYS_PER_QUERY), orgs)));
    return found;
  }

  private async lookupSome(client: ClickHouseClient, keys: readonly ClaimKey[], orgs?: readonly string[]): Promise<StoredClaim[]> {
    if (keys.length === 0) return [];
    const p = new ParamBag();
    const s = this.source;
    // As FixedString(16): compared as String, a key ending in zero bytes would not match.
    const conditions = [`${s.key} IN (SELECT toFixedString(unhex(arrayJoin(${p.add(keys.map((k) => k.toString('hex')), 'Array(String)')})), 16))`, s.isClaim];
    const since = this.since();
    if (since) {
      const at = p.add(formatDbDate(since), "DateTime64(3, 'UTC')");
      conditions.push(`${s.claimedAt} >= ${at}`);
      if (s.prune) conditions.push(s.prune(at));
    }
    if (orgs) conditions.push(orgsCondition(s.table, orgs, p));
    // On replicated shards the block numbers are not commit order: 0.
    const block = this.byBlock ? 'toString(_block_number)' : '0';
    return this.claims(client, `SELECT hex(${s.key}), toString(${s.rowId}), toString(${s.scope}), ${block} FROM ${s.table} WHERE ${conditions.join(' AND ')}`, p);
  }

  /**
   * Cluster mode on non-replicated shards (`readsBack`), after the caller's INSERT of claims of
   * `keys` answered (synchronously: they are on their shard): every claim of those keys in the
   * window, by key, and the ones that lose to the first committed of their key (`losers`), the
   * caller's and any other writer's. The caller undoes the losers before it answers: every writer
   * of a key reads after its own commit, so the first committed one is seen by all of them.
   */
  async settle(client: ClickHouseClient, keys: readonly ClaimKey[], orgs?: readonly string[]): Promise<Settled> {
    if (!this.readsBack) throw new Error('claims: settle is for cluster mode on non-replicated shards');
    const claims = await this.lookup(client, keys, orgs);
    return { claims, losers: losers(claims) };
  }

  /**
   * Reads the claims committed after `from` (a watermark this process read before its own write:
   * another write of this process may have moved the watermark past it meanwhile) into the
   * filter, and moves the watermark past them. `markers` are row ids of this process's own writes
   * (one row of each): the parts holding them are not read back (only their block is returned).
   * Rows of its own in another part (an INSERT spanning two partitions) come back in `others`
   * with their own row id. Claims read are added to the filter whatever their age: an older one
   * only costs a lookup.
   *
   * Two reads: the blocks committed after `from` (which are the caller's, and whether they hold
   * claims: no key is computed or sent back), then, only when some other block holds claims, the
   * claims of those blocks. A lone writer thus pays one narrow read per write.
   *
   * `ownPartitions`: when the caller's write is one INSERT that made exactly one part in each of
   * these partitions (ids as system.parts names them) and nothing else, the parts list alone can
   * say that nobody else committed since `from`: every active part above `from` is then a fresh
   * one (level 0, one block) of a distinct partition, one of these, and there are as many as
   * these. The caller's parts are among them (committed after `from` was read), so they are all
   * the caller's: no row is read, and every marker maps to the first of their blocks. Anything
   * else (another writer's part, a merge that already took one of them) takes the reads above.
   */
  async advance(client: ClickHouseClient, markers: readonly string[], from = this.mark, ownPartitions?: ReadonlySet<string>): Promise<AdvanceResult> {
    if (ownPartitions) {
      const alone = await freshPartsAbove(client, this.source.table, from, { count: ownPartitions.size, partitions: ownPartitions });
      if (alone) {
        if (alone.top > this.mark) this.mark = alone.top;
        return { own: new Map(markers.map((m) => [m, alone.first])), others: [] };
      }
    }
    const s = this.source;
    const p = new ParamBag();
    const w = p.add(from.toString(), 'UInt64');
    const own = p.add(markers, 'Array(UUID)');
    const blocks = await this.json<[string, string, string[], string]>(
      client,
      `SELECT toString(_block_number), toString(max(${PART_TOP})), groupUniqArrayIf(toString(${s.rowId}), ${s.rowId} IN ${own}), toString(countIf(${s.isClaim}))
       FROM ${s.table} WHERE ${committedAbove(w)} GROUP BY _block_number`,
      p,
    );
    const result: AdvanceResult = { own: new Map(), others: [] };
    let top = from;
    const theirs: string[] = [];
    for (const [b, partTop, marks, claims] of blocks) {
      if (BigInt(partTop) > top) top = BigInt(partTop);
      if (marks.length > 0) for (const m of marks) result.own.set(m, BigInt(b));
      else if (claims !== '0') theirs.push(b);
    }
    if (theirs.length > 0) {
      // RowBinary, streamed: another writer may have committed millions of claims since the
      // watermark (a bulk load, an instance that ran alone for a while), and every one goes into
      // the filter on this flush's path. Only the claims the caller can need become objects: those
      // whose key the filter may already hold (the caller's own keys are in it since its step 1;
      // repeats; false positives). A claim of a key the filter cannot hold contests nothing the
      // caller knows of: it is only added. Copies of one row (same key, same row id: one write
      // stored twice, which the rule never undoes) come once, the first committed.
      const q = new ParamBag();
      const rs = await client.exec({
        query: `SELECT _block_number, ${s.key}, ${s.rowId}, ${s.scope}, toUnixTimestamp64Milli(${s.claimedAt})
         FROM ${s.table} WHERE ${PART_TOP} > ${q.add(from.toString(), 'UInt64')} AND _block_number IN ${q.add(theirs.map(BigInt), 'Array(UInt64)')} AND ${s.isClaim}
         ORDER BY _block_number LIMIT 1 BY ${s.key}, ${s.rowId}
         FORMAT RowBinary`,
        query_params: q.toParams(),
        clickhouse_settings: { optimize_use_projections: 0 },
      });
      await forEachFixedRow(rs.stream as AsyncIterable<Buffer>, CLAIM_ROW_BYTES, (buf, at) => {
        const known = this.filter.mayHold(buf, at + 8);
        this.filter.add(buf, Number(buf.readBigInt64LE(at + 56)), at + 8);
        if (!known) return;
        const row = new RowBinaryReader(buf);
        row.at = at + 24;
        const rowId = row.uuid();
        result.others.push({ key: Buffer.from(buf.subarray(at + 8, at + 24)), rowId, scope: row.uuid(), block: buf.readBigUInt64LE(at), known });
      });
    }
    // Every part with a block number up to `top` was visible to the first read (numbers are given
    // at commit, in order), and the second read found every claim of those parts' blocks (rows
    // keep their block number through merges), so every claim up to it is now in the filter.
    if (top > this.mark) this.mark = top;
    return result;
  }

  /**
   * Cluster mode: whether the claim table's local table (on the node this client reaches; every
   * node has the same DDL) is a plain MergeTree, whose block numbers are given at commit.
   */
  private readShardsOnce(client: ClickHouseClient): Promise<void> {
    this.shardsRead ??= this.readShards(client).catch((err) => {
      this.shardsRead = undefined;
      throw err;
    });
    return this.shardsRead;
  }

  private async readShards(client: ClickHouseClient): Promise<void> {
    const engines = await this.rows(client, 'SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = {t:String}', { t: localName(this.source.table) });
    this.shardsOrdered = engines.length === 1 && engines[0][0] === 'MergeTree';
  }

  private async json<Row>(client: ClickHouseClient, query: string, p: ParamBag): Promise<Row[]> {
    // Block numbers and part names are in no projection: the engine need not try them.
    const rs = await client.query({ query, query_params: p.toParams(), format: 'JSONCompactEachRow', clickhouse_settings: { optimize_use_projections: 0 } });
    return rs.json<Row>();
  }

  private async load(client: ClickHouseClient): Promise<void> {
    const s = this.source;
    // The watermark first: every part committed up to it is visible to the read that follows.
    const top = await topBlock(client, s.table);
    if (this.filtering) await this.loadKeys(client);
    if (top > this.mark) this.mark = top;
  }

  private async loadKeys(client: ClickHouseClient): Promise<void> {
    const s = this.source;
    const p = new ParamBag();
    const conditions = [s.isClaim];
    const since = this.since();
    if (since) {
      const at = p.add(formatDbDate(since), "DateTime64(3, 'UTC')");
      conditions.push(`${s.claimedAt} >= ${at}`);
      if (s.prune) conditions.push(s.prune(at));
    }
    // RowBinary: 16 bytes of key and 8 of time per claim, millions of them at a start.
    const rs = await client.exec({
      query: `SELECT ${s.key}, toUnixTimestamp64Milli(${s.claimedAt}) FROM ${s.table} WHERE ${conditions.join(' AND ')} FORMAT RowBinary`,
      query_params: p.toParams(),
    });
    await forEachFixedRow(rs.stream as AsyncIterable<Buffer>, 24, (buf, at) => this.filter.add(buf, Number(buf.readBigInt64LE(at + 16)), at));
  }

  private async claims(client: ClickHouseClient, query: string, p: ParamBag): Promise<StoredClaim[]> {
    return (await this.rows(client, query, p.toParams())).map(([key, rowId, scope, block]) => ({ key: Buffer.from(key, 'hex'), rowId, scope, block: BigInt(block) }));
  }

  private async rows(client: ClickHouseClient, query: string, params: Record<string, unknown>, settings?: ClickHouseSettings): Promise<string[][]> {
    const rs = await client.query({ query, query_params: params, format: 'TabSeparated', clickhouse_settings: settings });
    const text = await rs.text();
    return text === '' ? [] : text.slice(0, -1).split('\n').map((line) => line.split('\t'));
  }
}
