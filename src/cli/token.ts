import type { Database } from '../clickhouse/connection.ts';
import { isScope, listTokens, mintToken, revokeToken, SCOPES, type Scope } from '../tokens/tokens.ts';
import { stringValue, UsageError, type Options, type ParsedArgs } from './args.ts';
import { UUID_PATTERN } from '../uuid.ts';

export const TOKEN_CREATE = {
  usage: `usage: tallyhouse token create --org <uuid> --scope <scope[,scope...]> [--name <text>] [--json]
  --org <uuid>      the organization the token acts for
  --scope <list>    comma list of ${SCOPES.join(', ')}
  --name <text>     a label shown by 'token list' (e.g. who or what uses it)
  --json            print {"token", "org_id", "scopes", "id", "name"} as JSON
The token is printed once; only its hash is stored.`,
  options: { org: { type: 'string' }, scope: { type: 'string' }, name: { type: 'string' }, json: { type: 'boolean' } } satisfies Options,
};

export const TOKEN_LIST = {
  usage: `usage: tallyhouse token list [--org <uuid>] [--json]
  --org <uuid>      only the tokens of this organization
  --json            print the list as JSON
Shows id, name, organization, scopes, creation and revocation times; never the tokens.`,
  options: { org: { type: 'string' }, json: { type: 'boolean' } } satisfies Options,
};

export const TOKEN_REVOKE = {
  usage: `usage: tallyhouse token revoke <token-id>
  <token-id>        the id shown by 'token create' and 'token list'
The service stops accepting the token within its TOKEN_CACHE_TTL_MS (default 5000: 5 seconds).`,
  options: {} satisfies Options,
};

export async function tokenCreate(db: Database, { values }: ParsedArgs, out: (s: string) => void): Promise<void> {
  const org = stringValue(values, 'org');
  if (org === undefined) throw new UsageError(`--org is required\n\n${TOKEN_CREATE.usage}`);
  if (!UUID_PATTERN.test(org)) throw new UsageError(`--org must be a UUID, got ${JSON.stringify(org)}`);
  const rawScopes = stringValue(values, 'scope');
  if (rawScopes === undefined) throw new UsageError(`--scope is required\n\n${TOKEN_CREATE.usage}`);
  const scopes = rawScopes.split(',').map((s) => s.trim()).filter(Boolean);
  if (scopes.length === 0 || !scopes.every(isScope)) {
    throw new UsageError(`--scope must be a comma list of ${SCOPES.join(', ')}; got ${JSON.stringify(rawScopes)}`);
  }
  const name = stringValue(values, 'name') ?? '';
  const minted = await mintToken(db, org.toLowerCase(), [...new Set(scopes)] as Scope[], name);
  if (values.json) out(JSON.stringify({ token: minted.token, org_id: minted.org_id, scopes: minted.scopes, id: minted.id, name }));
  else out(`token ${minted.id}${name ? ` "${name}"` : ''} for org ${minted.org_id} (${minted.scopes.join(', ')}):\n${minted.token}\nIt is shown only now; store it safely.`);
}

export async function tokenList(db: Database, { values }: ParsedArgs, out: (s: string) => void): Promise<void> {
  const org = stringValue(values, 'org');
  if (org !== undefined && !UUID_PATTERN.test(org)) throw new UsageError(`--org must be a UUID, got ${JSON.stringify(org)}`);
  const tokens = await listTokens(db.client(), org?.toLowerCase());
  if (values.json) {
    out(JSON.stringify(tokens));
    return;
  }
  const rows = [['id', 'name', 'org_id', 'scopes', 'created_at', 'revoked_at']];
  for (const t of tokens) rows.push([t.id, t.name || '-', t.org_id, t.scopes.join(','), t.created_at, t.revoked_at ?? '-']);
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  for (const r of rows) out(r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c]))).join('  '));
}

export async function tokenRevoke(db: Database, { positionals }: ParsedArgs, out: (s: string) => void): Promise<void> {
  const id = positionals[0];
  if (id === undefined) throw new UsageError(`the token id is required\n\n${TOKEN_REVOKE.usage}`);
  if (!UUID_PATTERN.test(id)) throw new UsageError(`revoke takes a token id (UUID, see 'token list'), got ${JSON.stringify(id)}`);
  if (!(await revokeToken(db, id))) throw new UsageError(`no token with id ${id}`);
  out(`revoked ${id} (the service stops accepting it within its TOKEN_CACHE_TTL_MS, 5 seconds by default)`);
}
