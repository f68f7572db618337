import type { Database } from '../clickhouse/connection.ts';
import { isScope, listTokens, mintToken, revokeToken, SCOPES, type Scope } from '../tokens/tokens.ts';
import { parseArgs, UsageError } from './args.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const TOKEN_USAGE = `tallyhouse token create --org <uuid> --scope <scope[,scope...]> [--name <text>] [--json]
tallyhouse token list [--org <uuid>] [--json]
tallyhouse token revoke <token-id>
scopes: ${SCOPES.join(', ')}`;

export async function tokenCommand(db: Database, argv: string[], out: (s: string) => void): Promise<void> {
  const { positional, flags } = parseArgs(argv, ['json']);
  const [action, ...rest] = positional;
  const client = db.client();
  switch (action) {
    case 'create': {
      const org = String(flags.org ?? '');
      if (!UUID.test(org)) throw new UsageError(`--org must be a UUID, got ${JSON.stringify(flags.org ?? '')}`);
      const scopes = String(flags.scope ?? '').split(',').map((s) => s.trim()).filter(Boolean);
      if (scopes.length === 0 || !scopes.every(isScope)) {
        throw new UsageError(`--scope must be a comma list of ${SCOPES.join(', ')}; got ${JSON.stringify(flags.scope ?? '')}`);
      }
      const minted = await mintToken(db, org.toLowerCase(), [...new Set(scopes)] as Scope[], typeof flags.name === 'string' ? flags.name : '');
      if (flags.json) out(JSON.stringify({ token: minted.token, org_id: minted.org_id, scopes: minted.scopes, id: minted.id }));
      else out(`token ${minted.id} for org ${minted.org_id} (${minted.scopes.join(', ')}):\n${minted.token}\nIt is shown only now; store it safely.`);
      return;
    }
    case 'list': {
      const org = typeof flags.org === 'string' ? flags.org : undefined;
      if (org !== undefined && !UUID.test(org)) throw new UsageError(`--org must be a UUID, got ${JSON.stringify(org)}`);
      const tokens = await listTokens(client, org);
      if (flags.json) out(JSON.stringify(tokens));
      else {
        out(['id                                    org_id                                scopes                          created_at                   revoked_at'].join(''));
        for (const t of tokens) out(`${t.id}  ${t.org_id}  ${t.scopes.join(',').padEnd(30)}  ${t.created_at.padEnd(27)}  ${t.revoked_at ?? '-'}`);
      }
      return;
    }
    case 'revoke': {
      const id = rest[0] ?? '';
      if (!UUID.test(id)) throw new UsageError(`revoke takes a token id (UUID, see 'token list'), got ${JSON.stringify(id)}`);
      if (!(await revokeToken(db, id))) throw new UsageError(`no token with id ${id}`);
      out(`revoked ${id} (the service stops accepting it within 5 seconds)`);
      return;
    }
    default:
      throw new UsageError(TOKEN_USAGE);
  }
}
