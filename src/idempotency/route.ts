/**
 * The route side of idempotency keys: wraps a route's handler so that a request carrying an
 * `Idempotency-Key` header runs it at most once per organization, endpoint (the route's
 * operationId) and key (store.ts). Without the header the handler simply runs.
 */
import { answer, isRouteAnswer, type Route } from '../server/route.ts';
import { checkedKey, type IdempotencyStore } from './store.ts';

export const IDEMPOTENCY_DESCRIPTION =
  'With an `Idempotency-Key` header (1..255 printable ASCII characters), the first answer is kept 24 hours per organization and ' +
  'replayed (same status and body, header `Idempotent-Replayed: true`) to a retry with the same key and body, storing nothing ' +
  'new; the same key with another body, or while its first request is still running, is a 409 `idempotency_conflict`.';

/**
 * The route with its handler made idempotent. It takes the whole route (defined, so its handler is
 * typed from its schemas) and answers a first run with the route's success status.
 */
export function idempotent<Body, Query>(store: IdempotencyStore, route: Route<Body, Query>): Route<Body, Query> {
  const { handler, operationId: endpoint, success } = route;
  return {
    ...route,
    handler: async (input) => {
      const key = checkedKey(input.headers['idempotency-key']);
      if (key === undefined) return handler(input);
      const result = await store.run({ orgId: input.auth.orgId, endpoint, key, body: input.body }, async () => {
        const out = await handler(input);
        return isRouteAnswer(out) ? { status: out.answer.status ?? success.status, body: out.answer.body } : { status: success.status, body: out };
      });
      return answer({ status: result.status, body: result.body, headers: result.replayed ? { 'Idempotent-Replayed': 'true' } : undefined });
    },
  };
}
