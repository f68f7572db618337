/**
 * Idempotency keys (the `Idempotency-Key` request header): the first answer of a key is kept for
 * 24 hours and replayed, status and body, to a retry with the same body; the handler does not run
 * again. The same key with another body is a 409 `idempotency_conflict`. Keys are per organization
 * and per endpoint. Storage and the race rule: schema/011-idempotency-keys.sql.
 *
 * Concurrency: a request that finds the key claimed by a request still running (in this or another
 * instance) gets a 409 `idempotency_conflict` with Retry-After: 1, rather than waiting: the
 * running request may take as long as its storage does, and holding a connection for it would
 * let retries pile up. Its retry, once the first one answered, gets the replay.
 *
 * A claim whose request died (service crash, SIGKILL) without answering blocks the key for
 * CLAIM_LEASE_MS; after that another request may claim it and run the handler again. If the dead
 * request had already stored its data, that data is stored twice: releases get a new id each time
 * (survey responses upsert by their own id, so for them the re-run is harmless).
 *
 * Claims (src/claims/claims.ts): a request reads its key's rows before claiming it only when the
 * process's claim view may hold the key (a retry, or a false positive); a key the view does not
 * hold was not claimed by this process, so the request claims at once. That read only spares a
 * claim: the read after the claim decides, with the rule of every claim (the lowest block
 * number wins), and finds the answer or the running claim of a request of another instance. The
 * view is not advanced by block number here: a key another instance used costs this process one
 * claim row and its withdrawal, never a wrong answer.
 *
 * Cluster mode: a key's rows live on its organization's shard. On non-replicated shards block
 * order is still commit order there (`ClaimView.byBlock`), and the read after the claim decides
 * by it as on one server. On replicated shards claims are ordered by (created_at, claim_id),
 * which every reader agrees on but which is not commit order (schema/011): two requests of one key
 * at the same moment may both run.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { hash, randomUUID } from 'node:crypto';
import { claimKey, ClaimView, type ClaimTable } from '../claims/claims.ts';
import { DEFAULT_CLAIM_FILTER_MAX_BYTES } from '../config.ts';
import { ParamBag } from '../clickhouse/sql.ts';
import { TenantOrg } from '../clickhouse/tenant.ts';
import { formatDbDate } from '../time/iso.ts';
import { conflict, DomainError, invalid } from '../errors.ts';

export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** How long a claim without an answer keeps others from running the same key. */
export const CLAIM_LEASE_MS = 60_000;
export const MAX_KEY_LENGTH = 255;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export interface StoredAnswer {
  status: number;
  body: unknown;
}

interface Row {
  claimId: string;
  state: 'pending' | 'done' | 'withdrawn';
  bodyHash: string;
  status: number;
  response: string;
  block: number;
  createdAt: number;
}

export interface IdempotentRequest {
  orgId: string;
  endpoint: string;
  key: string;
  /** The request body as the route parsed it: equal bodies hash equally. */
  body: unknown;
}

/** The header's value checked: 1..255 printable ASCII characters (no spaces), or a 400. */
export function checkedKey(raw: string | string[] | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const key = Array.isArray(raw) ? raw.join(',') : raw;
  if (!KEY_PATTERN.test(key)) {
    throw invalid('Invalid Idempotency-Key header', [
      { path: 'Idempotency-Key', message: `Must be 1 to ${MAX_KEY_LENGTH} printable ASCII characters without spaces` },
    ]);
  }
  return key;
}

/** Where Idempotency-Key claims live (schema/011): the `pending` rows. */
export const IDEMPOTENCY_CLAIMS: ClaimTable = {
  table: 'idempotency_keys',
  key: "MD5(concat(toString(org_id), ':', endpoint, ':', key))",
  isClaim: "state = 'pending'",
  claimedAt: 'created_at',
  windowMs: IDEMPOTENCY_WINDOW_MS,
  rowId: 'claim_id',
  scope: 'org_id',
};

export class IdempotencyStore {
  private view: ClaimView | undefined;

  /** `clustered`: cluster mode, where the view reads whether block order is commit order on the shards (schema/011). */
  constructor(
    private readonly client: () => ClickHouseClient,
    /** Read when needed: the route table is built before anything talks to the database. */
    private readonly isClustered: () => boolean = () => false,
    /** CLAIM_FILTER_MAX_BYTES. */
    private readonly filterMaxBytes = DEFAULT_CLAIM_FILTER_MAX_BYTES,
  ) {}

  /** The process's view of the keys claimed in the last 24 hours, loaded at the first request. */
  private async claims(): Promise<ClaimView> {
    this.view ??= new ClaimView(IDEMPOTENCY_CLAIMS, { maxBytes: this.filterMaxBytes, clustered: this.isClustered() });
    await this.view.ready(this.client());
    return this.view;
  }

  /**
   * Runs `work` once per (org, endpoint, key) and body within 24 hours, and returns its answer, or
   * the stored first answer (`replayed`). Throws 409 `idempotency_conflict` for another body, or
   * while the key's first request is still running. When `work` throws, its claim is withdrawn
   * and nothing is kept: a retry runs it again.
   */
  async run(req: IdempotentRequest, work: () => Promise<StoredAnswer>): Promise<StoredAnswer & { replayed: boolean }> {
    const bodyHash = hash('sha256', JSON.stringify(req.body) ?? '', 'hex');
    const view = await this.claims();
    const key = claimKey(req.orgId.toLowerCase(), req.endpoint, req.key);
    if (view.mayHold(key)) {
      const earlier = this.outcome(await this.rows(req, view.byBlock), bodyHash, undefined);
      if (earlier) return earlier;
    }

    const claimId = randomUUID();
    view.add(key, Date.now());
    await this.append(req, { claimId, state: 'pending', bodyHash, status: 0, response: '' });
    const afterClaim = this.outcome(await this.rows(req, view.byBlock), bodyHash, claimId);
    if (afterClaim) {
      await this.withdraw(req, claimId);
      return afterClaim;
    }
    let answer: StoredAnswer;
    try {
      answer = await work();
    } catch (err) {
      await this.withdraw(req, claimId).catch(() => undefined);
      throw err;
    }
    await this.append(req, { claimId, state: 'done', bodyHash, status: answer.status, response: JSON.stringify(answer.body) });
    return { ...answer, replayed: false };
  }

  /**
   * What the rows say for this body: the stored answer (replay), a conflict, a claim of another
   * request still running (409), or undefined when this request (`ownClaim`, or a request
   * without a claim yet) may run.
   */
  private outcome(rows: Row[], bodyHash: string, ownClaim: string | undefined): (StoredAnswer & { replayed: true }) | undefined {
    const done = rows.find((r) => r.state === 'done');
    if (done) {
      if (done.bodyHash !== bodyHash) throw reused();
      return { status: done.status, body: JSON.parse(done.response), replayed: true };
    }
    const now = Date.now();
    const withdrawn = new Set(rows.filter((r) => r.state === 'withdrawn').map((r) => r.claimId));
    const live = rows.filter((r) => r.state === 'pending' && !withdrawn.has(r.claimId) && now - r.createdAt < CLAIM_LEASE_MS);
    const first = live[0]; // rows are ordered by block number: the first committed claim
    if (!first || first.claimId === ownClaim) return undefined;
    if (first.bodyHash !== bodyHash) throw reused();
    throw new DomainError('conflict', 'A request with this Idempotency-Key is still in progress; retry once it has been answered', {
      code: 'idempotency_conflict',
      retryAfterSeconds: 1,
    });
  }

  /** The key's rows in the window, in claim order: by block number when that is commit order (`byBlock`), else by time. */
  private async rows(req: IdempotentRequest, byBlock: boolean): Promise<Row[]> {
    const p = new ParamBag();
    const order = byBlock ? 'block, state' : 'createdAt, claimId, state';
    const rs = await this.client().query({
      query: `SELECT toString(claim_id) AS claimId, toString(state) AS state, body_hash AS bodyHash, status, response,
                     ${byBlock ? '_block_number' : '0'} AS block, toUnixTimestamp64Milli(created_at) AS createdAt
              ${new TenantOrg(req.orgId, p).from('idempotency_keys')} AND endpoint = ${p.add(req.endpoint, 'String')} AND key = ${p.add(req.key, 'String')}
                AND created_at >= ${p.add(formatDbDate(new Date(Date.now() - IDEMPOTENCY_WINDOW_MS)), "DateTime64(3, 'UTC')")}
              ORDER BY ${order}`,
      query_params: p.toParams(),
      format: 'JSONEachRow',
      clickhouse_settings: { output_format_json_quote_64bit_integers: 0 },
    });
    return (await rs.json<Row>()).map((r) => ({ ...r, status: Number(r.status), block: Number(r.block), createdAt: Number(r.createdAt) }));
  }

  private async append(req: IdempotentRequest, row: Omit<Row, 'block' | 'createdAt'>): Promise<void> {
    await this.client().insert({
      table: 'idempotency_keys',
      format: 'JSONEachRow',
      values: [
        {
          org_id: req.orgId,
          endpoint: req.endpoint,
          key: req.key,
          claim_id: row.claimId,
          state: row.state,
          body_hash: row.bodyHash,
          status: row.status,
          response: row.response,
          created_at: formatDbDate(new Date()),
        },
      ],
      clickhouse_settings: { async_insert: 0 },
    });
  }

  /** Withdraws this request's claim: a row saying so (appended, visible to every later read). */
  private async withdraw(req: IdempotentRequest, claimId: string): Promise<void> {
    await this.append(req, { claimId, state: 'withdrawn', bodyHash: '', status: 0, response: '' });
  }
}

const reused = () =>
  conflict('This Idempotency-Key was already used with another request body (keys are kept 24 hours): use a new key for a new request', 'idempotency_conflict');
