/**
 * Dense user numbers: every known user of an organization gets a UInt32, the same in every
 * process and after every restart, never given to two users, never two to one user. Events carry
 * it (`events.user_num`, 0 for anonymous events) so that unique users are roaring bitmaps of small
 * integers (the `event_user_hours` projection, src/events/read/user-hours.ts) rather than hash
 * sets of 16-byte ids. Storage: schema/230 (`event_user_numbers`); the protocol as a whole:
 * docs/architecture.md ("Dense user numbers").
 *
 * The log. A claim is a row (org_id, user_id, num) of `event_user_numbers`, a MergeTree with
 * `enable_block_number_column`: as for every claim of src/claims/claims.ts, block order is commit
 * order (src/claims/block-log.ts), and every reader orders an organization's claims by (block, num). Read in that order, a
 * claim is VALID when (1) it is the first claim of its number and (2) no earlier claim of its user
 * is valid. A user's number is its valid claim's. (1) gives a number to one user at most, (2) one
 * number to a user; validity depends only on earlier claims, so it never changes once decided, and
 * every reader decides the same. A claim that loses (its number was taken first, or its user
 * already had one) leaves its number unused forever: a hole, harmless to bitmaps.
 * The same rule as one query (`lookup`): a user's number is the `num` of its earliest claim that
 * is the first of its number.
 *
 * A flush (the group committer's, before its INSERT into `events`):
 *   1. each known user of its rows is looked up in the process's map of the organization; a user
 *      found there has a number (valid claims stay valid): no round trip;
 *   2. the others get proposals, numbers above every number the process has seen of the
 *      organization, one INSERT of claims for the whole flush;
 *   3. when the claims table's parts list shows that the round's INSERT is the only block
 *      committed since the process's watermark (one writer: the common case), its proposals are
 *      all valid and applied as they are; otherwise the claims committed after the watermark are
 *      read in (block, num) order and applied to the maps (every writer's, so the maps stay
 *      current), which moves the watermark; a proposal that lost goes back to step 2 with a
 *      fresh number;
 *   4. the numbers are written into the rows (`user_num`), then the rows are inserted.
 * A claim whose events never get stored (a crash, a failed INSERT) only allocates its number. A
 * user deletion deletes events, never claims: the user keeps its number if it comes back.
 *
 * The map of an organization is loaded at its first new user (all its claims). Watermarks: the
 * highest block a read saw is a valid watermark of what it read (block-log.ts). On one
 * table (not a cluster) the process keeps one watermark for every map it holds, read from the
 * parts list before the first map is loaded: every held map has every claim up to it. A round
 * whose INSERT is, in the parts list read after it, the only part above that watermark (level 0,
 * one block) and that started from it, is then alone since: no other claim can precede its own,
 * so each proposal (a number above all the organization's, a user without one) is valid, and its
 * block is the new watermark; anything else (another writer, a merge that already took the part)
 * reads every claim above the watermark. On a cluster each organization's claims live in the
 * local table of its shard (read through the Distributed table, which passes `_block_number`
 * through), whose block numbers order only that shard: each organization keeps its own
 * watermark, and each round reads its organizations' claims above theirs.
 *
 * Memory: a known user is a 16-character key and a small integer in a Map (BYTES_PER_KNOWN_USER,
 * an upper bound of what bench/events/README.md measured: the Map's table grows by doubling) plus
 * a bit per number in the organization's `seen` set. `maxUsers` (USER_NUMBERS_MAX_USERS) caps the
 * users held: an organization whose users, once loaded, pass it is dropped at once and not held
 * again, and its flushes look their users up (`lookUp`, one query per flush, then the claims and
 * another lookup for new users): slower, never weaker.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { Readable } from 'node:stream';
import { stringify as stringifyUuid } from 'uuid';
import { forEachFixedRow, RowBinaryWriter } from '../clickhouse/rowbinary.ts';
import { ParamBag } from '../clickhouse/sql.ts';
import { orgsCondition, TenantOrg } from '../clickhouse/tenant.ts';
import { unavailable } from '../errors.ts';
import { committedAbove, freshPartsAbove, topBlock } from '../claims/block-log.ts';
import type { EventChunk } from './encode.ts';

export const USER_NUMBERS_TABLE = 'event_user_numbers';

/** Heap bytes per user held in a map (a Map entry with a 16-character key), at most. */
export const BYTES_PER_KNOWN_USER = 80;

/** Rounds of proposals before a flush gives up (503): each lost round means another writer took the numbers first. */
const MAX_ROUNDS = 8;


/** A set of numbers, one bit each. */
class NumberSet {
  private bits = new Uint32Array(1024);
  has(n: number): boolean {
    const w = n >>> 5;
    return w < this.bits.length && (this.bits[w] & (1 << (n & 31))) !== 0;
  }
  add(n: number): void {
    const w = n >>> 5;
    if (w >= this.bits.length) {
      const grown = new Uint32Array(Math.max(w + 1, this.bits.length * 2));
      grown.set(this.bits);
      this.bits = grown;
    }
    this.bits[w] |= 1 << (n & 31);
  }
  get bytes(): number {
    return this.bits.byteLength;
  }
}

/** One organization's view of the log (exported for the rule's unit test). */
export class OrgNumbers {
  /** User (16 id bytes as latin1) -> number, for every valid claim up to `mark`. */
  readonly users = new Map<string, number>();
  /** Every number claimed up to `mark`, valid or not (rule 1). */
  readonly seen = new NumberSet();
  /** Every claim of the organization with a block number up to this is applied; -1: none read yet. */
  mark = -1n;
  /** The highest number seen. */
  top = 0;
  /** The next number this process proposes: above `top` and above every proposal it has made. */
  next = 1;
  /** Not held (past the cap): its users are looked up. */
  lookedUp = false;

  /** Applies one claim read in (block, num) order. */
  apply(user: string, num: number): void {
    if (this.seen.has(num)) return;
    this.seen.add(num);
    if (num > this.top) this.top = num;
    if (num >= this.next) this.next = num + 1;
    if (!this.users.has(user)) this.users.set(user, num);
  }

  propose(): number {
    if (this.next <= this.top) this.next = this.top + 1;
    return this.next++;
  }
}

export interface UserNumbersOptions {
  /** Users held in memory across organizations (USER_NUMBERS_MAX_USERS); 0: every flush looks its users up. */
  maxUsers: number;
  /** The claims table is a Distributed one (a cluster): one watermark per organization, no parts-list check. */
  clustered?: boolean;
}

export interface UserNumbersStats {
  organizations: number;
  users: number;
  /** Organizations not held (past the cap). */
  lookedUp: number;
  /** Proposals that lost (another writer's claim came first): each costs a round. */
  lost: number;
  /** Rounds whose claims were applied from the parts list alone (no read), and rounds that read the claims. */
  alone: number;
  read: number;
}

/** A round's proposals: per organization, (user, number) in the order proposed (ascending numbers). */
type Proposals = Map<string, [string, number][]>;

/** The process's user numbers (one per process: every flush shares it). */
export class UserNumbers {
  private readonly orgs = new Map<string, OrgNumbers>();
  private heldUsers = 0;
  private lost = 0;
  private alone = 0;
  private read = 0;
  /** Not clustered: every held map has every claim with a block number up to this; -1: not read yet. */
  private watermark = -1n;
  /** Reads of the log are applied one at a time, in order. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(readonly options: UserNumbersOptions) {}

  /** The numbers the process holds for an organization (valid for good), if it holds them. */
  held(orgId: string): ReadonlyMap<string, number> | undefined {
    const org = this.orgs.get(orgId);
    return org && !org.lookedUp ? org.users : undefined;
  }

  stats(): UserNumbersStats {
    let lookedUp = 0;
    for (const o of this.orgs.values()) if (o.lookedUp) lookedUp++;
    return { organizations: this.orgs.size, users: this.heldUsers, lookedUp, lost: this.lost, alone: this.alone, read: this.read };
  }

  /**
   * The numbers of these users of the organization (16-byte ids as latin1 strings), allocating
   * the missing ones. Resolves once every user has a valid number.
   */
  async numbers(client: ClickHouseClient, orgId: string, users: readonly string[]): Promise<Map<string, number>> {
    return (await this.numbersOf(client, new Map([[orgId, users]]))).get(orgId)!;
  }

  /** `numbers` for several organizations at once: one INSERT of claims and one read per round. */
  async numbersOf(client: ClickHouseClient, wanted: ReadonlyMap<string, readonly string[]>): Promise<Map<string, Map<string, number>>> {
    const result = new Map<string, Map<string, number>>();
    let missing = new Map<string, readonly string[]>();
    for (const [orgId, users] of wanted) {
      result.set(orgId, new Map());
      missing.set(orgId, users);
    }
    // Organizations held but never read are loaded (all their claims); one that passes the cap
    // is then looked up instead.
    const unread = [...missing.keys()].filter((o) => !this.org(o).lookedUp && this.org(o).mark < 0n);
    if (unread.length > 0) await this.advance(client, unread);
    for (let round = 0; ; round++) {
      const known = await this.known(client, missing);
      const rest = new Map<string, readonly string[]>();
      for (const [orgId, users] of missing) {
        const found = result.get(orgId)!;
        const numbers = known.get(orgId)!;
        const left = users.filter((u) => {
          const n = numbers.get(u);
          if (n !== undefined) found.set(u, n);
          return n === undefined;
        });
        if (left.length > 0) rest.set(orgId, left);
      }
      if (round > 0) for (const left of rest.values()) this.lost += left.length;
      missing = rest;
      if (missing.size === 0) return result;
      if (round === MAX_ROUNDS) throw unavailable('Numbering new users kept losing to other writers; retry shortly', 1);
      const from = this.watermark;
      const proposals = await this.claim(client, missing);
      const held = [...missing.keys()].filter((o) => !this.org(o).lookedUp);
      if (held.length > 0) await this.advance(client, held, { proposals, from });
    }
  }

  /** What is known of these users' numbers: from the maps of held organizations, by lookup for the others. */
  private async known(client: ClickHouseClient, users: ReadonlyMap<string, readonly string[]>): Promise<Map<string, ReadonlyMap<string, number>>> {
    const known = new Map<string, ReadonlyMap<string, number>>();
    for (const [orgId, ids] of users) {
      const org = this.org(orgId);
      known.set(orgId, org.lookedUp ? await this.lookUp(client, orgId, ids) : org.users);
    }
    return known;
  }

  private org(orgId: string): OrgNumbers {
    let org = this.orgs.get(orgId);
    if (!org) {
      org = new OrgNumbers();
      if (this.options.maxUsers === 0) org.lookedUp = true;
      this.orgs.set(orgId, org);
    }
    return org;
  }

  /** Stops holding an organization's map (past the cap); its proposals stay above what it saw. */
  private release(orgId: string): void {
    const org = this.org(orgId);
    this.heldUsers -= org.users.size;
    org.users.clear();
    org.lookedUp = true;
  }

  /** INSERT of one claim per missing user, numbers proposed above everything seen; returns them. */
  private async claim(client: ClickHouseClient, missing: ReadonlyMap<string, readonly string[]>): Promise<Proposals> {
    const proposals: Proposals = new Map();
    const w = new RowBinaryWriter();
    for (const [orgId, users] of missing) {
      const org = this.org(orgId);
      const mine: [string, number][] = [];
      for (const u of users) {
        const num = org.propose();
        mine.push([u, num]);
        w.uuid(orgId);
        w.uuidBytes(Buffer.from(u, 'latin1'));
        w.uint32(num);
      }
      proposals.set(orgId, mine);
    }
    // One block, so one part per shard: the claims of one organization get one block number.
    const result = await client.exec({
      query: `INSERT INTO ${USER_NUMBERS_TABLE} (org_id, user_id, num) FORMAT RowBinary`,
      values: Readable.from([w.finish()], { objectMode: false }),
      clickhouse_settings: { async_insert: 0, wait_end_of_query: 1 },
    });
    for await (const _ of result.stream);
    return proposals;
  }

  /**
   * Brings the maps of these held organizations up to date: after a round (`round`: its
   * proposals, and the watermark it started from) from the parts list when it was alone, else by
   * reading the claims committed after the watermark(s), in (block, num) order. Serialized: two
   * reads applying overlapping claims out of order would break the rule.
   */
  private advance(client: ClickHouseClient, orgIds: readonly string[], round?: { proposals: Proposals; from: bigint }): Promise<void> {
    const run = this.queue.then(async () => {
      if (this.options.clustered) await this.advanceNow(client, orgIds);
      else {
        // Before the first map is loaded: every map loaded after it has every claim up to it.
        if (this.watermark < 0n) this.watermark = await topBlock(client, USER_NUMBERS_TABLE);
        const first = orgIds.filter((o) => this.org(o).mark < 0n);
        if (first.length > 0) await this.advanceNow(client, first);
        if (round && first.length < orgIds.length) {
          if (round.from === this.watermark && (await this.applyIfAlone(client, round.proposals))) this.alone++;
          else {
            await this.advanceAll(client);
            this.read++;
          }
        }
      }
      // Past the cap: the organizations just read are dropped (looked up from now on).
      for (const orgId of orgIds) if (this.heldUsers > this.options.maxUsers) this.release(orgId);
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * The parts-list case of a round that started from the current watermark: when the only active
   * part above it is one fresh part (level 0, one block), that part is the round's own INSERT
   * (committed, above the watermark it started from) and nobody committed a claim since: its
   * proposals are all valid. They are applied in order and the watermark moves to its block.
   */
  private async applyIfAlone(client: ClickHouseClient, proposals: Proposals): Promise<boolean> {
    const alone = await freshPartsAbove(client, USER_NUMBERS_TABLE, this.watermark, { count: 1 });
    if (!alone) return false;
    const block = alone.top;
    for (const [orgId, mine] of proposals) {
      const org = this.org(orgId);
      if (org.lookedUp) continue;
      const before = org.users.size;
      for (const [user, num] of mine) org.apply(user, num);
      this.heldUsers += org.users.size - before;
      org.mark = block;
    }
    this.watermark = block;
    return true;
  }

  /**
   * Not clustered: every claim committed after the watermark, of every organization, in (block,
   * num) order, into the maps held (the others are skipped); the watermark moves to the highest
   * block read, so that every held map has every claim up to it.
   */
  private async advanceAll(client: ClickHouseClient): Promise<void> {
    const p = new ParamBag();
    const w = p.add(this.watermark.toString(), 'UInt64');
    // A map not loaded yet is skipped: its first load reads all of its claims, in order.
    const top = await this.readClaims(client, committedAbove(w), p, 'ORDER BY _block_number, num', { loadedOnly: true });
    if (top > this.watermark) this.watermark = top;
  }

  private async advanceNow(client: ClickHouseClient, orgIds: readonly string[]): Promise<void> {
    const marks = orgIds.map((o) => this.org(o).mark);
    const from = marks.reduce((a, b) => (b < a ? b : a));
    const p = new ParamBag();
    const conditions = [orgsCondition(USER_NUMBERS_TABLE, orgIds, p)];
    if (from >= 0n) {
      const w = p.add(from.toString(), 'UInt64');
      conditions.push(committedAbove(w));
    }
    // A first load reads every claim of the organization.
    const top = new Map<OrgNumbers, bigint>();
    await this.readClaims(client, conditions.join(' AND '), p, 'ORDER BY org_id, _block_number, num', { tops: top });
    for (const o of orgIds) {
      const org = this.org(o);
      // Nothing newer read: every claim up to the old mark is still applied; a first read that
      // found no claim has applied all of them (none).
      org.mark = top.get(org) ?? (org.mark < 0n ? 0n : org.mark);
    }
  }

  /**
   * Streams the claims that match `where` in `order` (each organization's in (block, num) order)
   * into the maps held, each claim once: a claim at or below its organization's mark is already
   * applied. Returns the highest block read (0: none); `tops` gets each organization's;
   * `loadedOnly`: maps not loaded yet are left alone.
   */
  private async readClaims(
    client: ClickHouseClient,
    where: string,
    p: ParamBag,
    order: string,
    { tops = new Map<OrgNumbers, bigint>(), loadedOnly = false }: { tops?: Map<OrgNumbers, bigint>; loadedOnly?: boolean } = {},
  ): Promise<bigint> {
    // RowBinary: org (16), user (16, RFC byte order), num (4), block (8) per claim.
    const rs = await client.exec({
      query: `SELECT UUIDStringToNum(toString(org_id)), UUIDStringToNum(toString(user_id)), num, _block_number FROM ${USER_NUMBERS_TABLE}
              WHERE ${where} ${order} FORMAT RowBinary`,
      query_params: p.toParams(),
      clickhouse_settings: { optimize_use_projections: 0 },
    });
    let highest = 0n;
    let current: OrgNumbers | undefined;
    let currentOrg = '';
    await forEachFixedRow(rs.stream as AsyncIterable<Buffer>, 44, (buf, at) => {
      const orgKey = buf.toString('latin1', at, at + 16);
      if (orgKey !== currentOrg) {
        currentOrg = orgKey;
        current = this.orgs.get(stringifyUuid(buf, at));
      }
      const block = buf.readBigUInt64LE(at + 36);
      if (block > highest) highest = block;
      if (!current || current.lookedUp || block <= current.mark || (loadedOnly && current.mark < 0n)) return;
      const before = current.users.size;
      current.apply(buf.toString('latin1', at + 16, at + 32), buf.readUInt32LE(at + 32));
      this.heldUsers += current.users.size - before;
      tops.set(current, block);
    });
    return highest;
  }

  /**
   * The numbers of these users of an organization not held, by the rule as one query, and the
   * organization's highest number (so that its proposals start above it).
   */
  private async lookUp(client: ClickHouseClient, orgId: string, users: readonly string[]): Promise<Map<string, number>> {
    const org = this.org(orgId);
    const p = new ParamBag();
    const o = new TenantOrg(orgId, p);
    const ids = p.add(users.map((u) => stringifyUuid(Buffer.from(u, 'latin1'))), 'Array(UUID)');
    const t = USER_NUMBERS_TABLE;
    const rs = await client.query({
      query: `SELECT hex(UUIDStringToNum(toString(user_id))) AS u, argMin(num, _block_number) AS n ${o.from(t)} AND user_id IN ${ids}
                AND (num, _block_number) IN (SELECT num, min(_block_number) ${o.from(t)} AND num IN (SELECT num ${o.from(t)} AND user_id IN ${ids}) GROUP BY num)
              GROUP BY user_id
              UNION ALL SELECT '', (SELECT max(num) ${o.from(t)})`,
      query_params: p.toParams(),
      format: 'JSONEachRow',
      clickhouse_settings: { optimize_use_projections: 0 },
    });
    const found = new Map<string, number>();
    for (const r of await rs.json<{ u: string; n: number | string | null }>()) {
      if (r.u !== '') found.set(Buffer.from(r.u, 'hex').toString('latin1'), Number(r.n));
      else if (Number(r.n ?? 0) > org.top) org.top = Number(r.n ?? 0);
    }
    return found;
  }
}

/**
 * Writes each row's user number into the chunks' bodies (`user_num`, the last 4 bytes of each row:
 * encode.ts), allocating numbers for users met for the first time. Anonymous rows keep 0. A row
 * whose user the process holds is written at once (one key and one Map lookup); the others wait
 * for `numbersOf`.
 */
export async function numberUsers(client: ClickHouseClient, chunks: readonly EventChunk[], numbers: UserNumbers): Promise<void> {
  const waiting: { chunk: EventChunk; row: number; user: string }[] = [];
  for (const chunk of chunks) {
    // Numbered whole while it waited (needsNumbers).
    if (numbered.has(chunk)) continue;
    const held = numbers.held(chunk.orgId);
    for (let row = 0; row < chunk.rows; row++) {
      const user = chunk.userKey(row);
      if (user === undefined) continue;
      const n = held?.get(user);
      if (n === undefined) waiting.push({ chunk, row, user });
      else chunk.setUserNumber(row, n);
    }
  }
  if (waiting.length === 0) return;
  const wanted = new Map<string, Set<string>>();
  for (const w of waiting) (wanted.get(w.chunk.orgId) ?? wanted.set(w.chunk.orgId, new Set()).get(w.chunk.orgId)!).add(w.user);
  const got = await numbers.numbersOf(client, new Map([...wanted].map(([o, users]) => [o, [...users]])));
  for (const w of waiting) w.chunk.setUserNumber(w.row, got.get(w.chunk.orgId)!.get(w.user)!);
}

/**
 * Whether some row of these chunks has a known user that `numbers` does not hold yet (its flush
 * will take a claims round before its INSERT). The numbers it finds are written into the rows as
 * it goes, and a chunk found complete is remembered (numberUsers then skips it: one Map lookup a
 * row, not two): a user held stays held with the same number (valid claims stay valid; an
 * organization past the cap is dropped whole, and then its chunks are not asked about again:
 * they take a lookup, which this answer only schedules, never decides).
 */
export function needsNumbers(chunks: Iterable<EventChunk>, numbers: UserNumbers): boolean {
  for (const chunk of chunks) {
    if (numbered.has(chunk)) continue;
    const held = numbers.held(chunk.orgId);
    if (!held) return true;
    for (let row = 0; row < chunk.rows; row++) {
      const user = chunk.userKey(row);
      if (user === undefined) continue;
      const n = held.get(user);
      if (n === undefined) return true;
      chunk.setUserNumber(row, n);
    }
    numbered.add(chunk);
  }
  return false;
}
const numbered = new WeakSet<EventChunk>();
