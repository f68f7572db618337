import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Database } from '../clickhouse/connection.ts';
import { ParamBag } from '../clickhouse/sql.ts';
import { tokensOfOrg } from '../clickhouse/tenant.ts';

export const SCOPES = ['events', 'events:read', 'releases', 'responses:read', 'responses:write'] as const;
export type Scope = (typeof SCOPES)[number];

/** `th_` + 32 random bytes, base64url: 256 bits of entropy. */
const TOKEN_PATTERN = /^th_[A-Za-z0-9_-]{43}$/;

export function isWellFormedToken(token: string): boolean {
  return TOKEN_PATTERN.test(token);
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export function isScope(s: string): s is Scope {
  return (SCOPES as readonly string[]).includes(s);
}

export interface TokenRecord {
  id: string;
  org_id: string;
  scopes: Scope[];
  name: string;
  created_at: string;
  revoked_at: string | null;
}

export interface MintedToken {
  token: string;
  id: string;
  org_id: string;
  scopes: Scope[];
}

const nowMs = () => Date.now();
// version orders the rows of one id: the later write (a revocation) wins.
const versionNow = () => BigInt(nowMs()) * 1000n + BigInt(Math.floor(Math.random() * 1000));

/** Where tokens are written: a client, or a database (in cluster mode: every node, see below). */
export type TokenStore = ClickHouseClient | Pick<Database, 'client' | 'cluster'>;

/**
 * Token rows are written to every node of a node-by-node cluster (cluster-ddl.ts EVERY_NODE: each
 * node keeps a full copy, so any live node verifies any token). A write that misses a node fails
 * as a whole (retry once the node is back): a revocation must never leave a node accepting the
 * token. One node, ON CLUSTER through one URL, or replicated tables: one write.
 */
function writeClients(store: TokenStore): ClickHouseClient[] {
  if ('query' in store) return [store];
  const cluster = store.cluster;
  if (cluster && !cluster.layout.onCluster && !cluster.layout.replicated) return cluster.nodes().map((n) => n.client);
  return [store.client()];
}

const readClient = (store: TokenStore): ClickHouseClient => ('query' in store ? store : store.client());

async function insertTokenRow(store: TokenStore, row: Record<string, unknown>): Promise<void> {
  await Promise.all(writeClients(store).map((client) => client.insert({ table: 'api_tokens', format: 'JSONEachRow', values: [row] })));
}

export async function mintToken(store: TokenStore, orgId: string, scopes: Scope[], name = ''): Promise<MintedToken> {
  const token = `th_${randomBytes(32).toString('base64url')}`;
  const id = randomUUID();
  await insertTokenRow(store, { id, org_id: orgId, token_hash: hashToken(token), scopes, name, created_at: nowMs(), revoked_at: null, version: versionNow().toString() });
  return { token, id, org_id: orgId, scopes };
}

export async function listTokens(client: ClickHouseClient, orgId?: string): Promise<TokenRecord[]> {
  const bag = new ParamBag();
  const rs = await client.query({
    query: `SELECT id, org_id, scopes, name,
                   formatDateTime(created_at, '%Y-%m-%dT%H:%i:%S.%fZ') AS created_at,
                   if(revoked_at IS NULL, NULL, formatDateTime(assumeNotNull(revoked_at), '%Y-%m-%dT%H:%i:%S.%fZ')) AS revoked_at
            FROM api_tokens FINAL
            WHERE ${tokensOfOrg(orgId, bag)}
            ORDER BY created_at`,
    query_params: bag.toParams(),
    format: 'JSONEachRow',
  });
  return rs.json<TokenRecord>();
}

/** Returns false when no such token exists. Takes effect in the service within the cache TTL (5 s). */
export async function revokeToken(store: TokenStore, id: string): Promise<boolean> {
  const rs = await readClient(store).query({
    query: 'SELECT id, org_id, token_hash, scopes, name, created_at FROM api_tokens FINAL WHERE id = {id:UUID} LIMIT 1',
    query_params: { id },
    format: 'JSONEachRow',
  });
  const [row] = await rs.json<Record<string, unknown>>();
  if (!row) return false;
  await insertTokenRow(store, { ...row, revoked_at: nowMs(), version: versionNow().toString() });
  return true;
}

export interface TokenIdentity {
  tokenId: string;
  orgId: string;
  scopes: Scope[];
}

/** The live (not revoked) token with this hash, if any. */
export async function findActiveToken(client: ClickHouseClient, tokenHash: string): Promise<TokenIdentity | undefined> {
  const rs = await client.query({
    query: 'SELECT id, org_id, scopes FROM api_tokens FINAL WHERE token_hash = {h:String} AND revoked_at IS NULL LIMIT 1',
    query_params: { h: tokenHash },
    format: 'JSONEachRow',
  });
  const [row] = await rs.json<{ id: string; org_id: string; scopes: Scope[] }>();
  return row ? { tokenId: row.id, orgId: row.org_id, scopes: row.scopes } : undefined;
}
