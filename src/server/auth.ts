import type { Middleware } from 'koa';
import type { Database } from '../clickhouse/connection.ts';
import type { TokenCache } from '../tokens/cache.ts';
import { isWellFormedToken, type Scope, type TokenIdentity } from '../tokens/tokens.ts';
import { DomainError } from '../errors.ts';

export interface AuthState {
  auth: TokenIdentity;
}

// One body for missing, malformed, unknown and revoked tokens: nothing tells them apart.
const unauthorized = () =>
  new DomainError('unauthenticated', 'Missing or invalid API token', { headers: { 'WWW-Authenticate': 'Bearer' } });

/**
 * Resolves `Authorization: Bearer <token>` to its organization and checks `scope` (403 without
 * it); a list of scopes is satisfied by any one of them.
 */
export function requireScope(scope: Scope | readonly Scope[], db: Database, tokens: TokenCache): Middleware<AuthState> {
  const accepted: readonly Scope[] = typeof scope === 'string' ? [scope] : scope;
  return async (ctx, next) => {
    const header = ctx.get('authorization');
    const match = /^Bearer ([^\s]+)$/i.exec(header.trim());
    if (!match || !isWellFormedToken(match[1])) throw unauthorized();
    const identity = await tokens.lookup(db.client(), match[1]);
    if (!identity) throw unauthorized();
    if (!accepted.some((s) => identity.scopes.includes(s))) {
      throw new DomainError('forbidden', `This token lacks the ${accepted.map((s) => `"${s}"`).join(' or ')} scope`);
    }
    ctx.state.auth = identity;
    await next();
  };
}
