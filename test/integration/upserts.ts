import { expect } from 'chai';
import type { TestService } from './harness.ts';

/**
 * Writes `first` through the API in two requests (split at `splitAt`), then `upserts` in a third,
 * so the upserts land in a later part than the versions they replace: a read that does not pick
 * the newest version (FINAL) answers an older one. Returns the newest version of every record,
 * in `first`'s order.
 */
export async function writeWithLaterUpserts<R extends { id?: unknown }>(svc: TestService, token: string, first: R[], upserts: R[], splitAt: number): Promise<R[]> {
  for (const batch of [first.slice(0, splitAt), first.slice(splitAt), upserts]) {
    const res = await svc.request('POST', '/1.0/survey/response', { token, body: batch });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
  }
  const byId = new Map(first.map((r) => [r.id, r]));
  for (const u of upserts) byId.set(u.id, u);
  return [...byId.values()];
}
