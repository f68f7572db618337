/**
 * The route side of idempotency keys: wraps a route's handler so that a request carrying an
 * `Idempotency-Key` header runs it at most once per organization, endpoint and key (store.ts).
 * Without the header the handler simply runs.
 */
import { answer, isRouteAnswer, type RouteInput } from '../server/route.ts';
import { checkedKey, type IdempotencyStore } from './store.ts';

export const IDEMPOTENCY_DESCRIPTION =
  'With an `Idempotency-Key` header (1..255 printable ASCII characters), the first answer is kept 24 hours per organization and ' +
  'replayed (same status and body, header `Idempotent-Replayed: true`) to a retry with the same key and body, storing nothing ' +
  'new; the same key with another body, or while its first request is still running, is a 409 `idempotency_conflict`.';

export function idempotent<Body, Query>(
  store: IdempotencyStore,
  endpoint: string,
  successStatus: number,
  handler: (input: RouteInput<Body, Query>) => Promise<unknown> | unknown,
): (input: RouteInput<Body, Query>) => Promise<unknown> {
  return async (input) => {
    const key = checkedKey(input.headers['idempotency-key']);
    if (key === undefined) return handler(input);
    const result = await store.run({ orgId: input.auth.orgId, endpoint, key, body: input.body }, async () => {
      const out = await handler(input);
      return isRouteAnswer(out) ? { status: out.answer.status ?? successStatus, body: out.answer.body } : { status: successStatus, body: out };
    });
    return answer({ status: result.status, body: result.body, headers: result.replayed ? { 'Idempotent-Replayed': 'true' } : undefined });
  };
}
