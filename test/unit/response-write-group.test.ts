import { expect } from 'chai';
import type { ResponseRecord } from '../../src/responses/record.ts';
import { ResponseWriteQueue } from '../../src/responses/write-group.ts';

/** The group writes seen by the queue, each answered when the test says. */
function recorder(maxInFlight: number | 'default' = 2) {
  const calls: Array<{ orgId: string; batches: string[][]; answer: (outcomes: Array<number | Error> | Error) => void }> = [];
  const write = (orgId: string, batches: readonly (readonly ResponseRecord[])[]) =>
    new Promise<Array<number | Error>>((resolve, reject) => {
      calls.push({
        orgId,
        batches: batches.map((b) => b.map((r) => r.id)),
        answer: (outcomes) => (outcomes instanceof Error ? reject(outcomes) : resolve(outcomes)),
      });
    });
  return { calls, queue: maxInFlight === 'default' ? new ResponseWriteQueue(write) : new ResponseWriteQueue(write, maxInFlight) };
}
const req = (...ids: string[]) => ids.map((id) => ({ id }) as ResponseRecord);
const tick = () => new Promise((r) => setImmediate(r));

describe('survey-response group commit (write-group.ts)', () => {
  it('a lone request starts at once; two groups per org in flight; the requests waiting go together', async () => {
    const { calls, queue } = recorder();
    const a = queue.submit('org', req('a1', 'a2'));
    const b = queue.submit('org', req('b1'));
    const c = queue.submit('org', req('c1'));
    const d = queue.submit('org', req('d1'));
    await tick();
    expect(calls.map((x) => x.batches)).to.deep.equal([[['a1', 'a2']], [['b1']]]);
    calls[0].answer([2]);
    expect(await a).to.equal(2);
    await tick();
    expect(calls[2].batches, 'the two that waited, in one group').to.deep.equal([['c1'], ['d1']]);
    calls[1].answer([1]);
    calls[2].answer([1, new Error('400 for d')]);
    expect(await b).to.equal(1);
    expect(await c).to.equal(1);
    await d.then(() => expect.fail('d resolved'), (err: Error) => expect(err.message).to.equal('400 for d'));
  });

  it('a request that shares an id with an earlier waiting one goes in a later group, in arrival order', async () => {
    const { calls, queue } = recorder();
    queue.submit('org', req('x'));
    queue.submit('org', req('y'));
    const waiting = [queue.submit('org', req('p', 'q')), queue.submit('org', req('q')), queue.submit('org', req('r')), queue.submit('org', req('q', 's'))];
    await tick();
    calls[0].answer([1]);
    await tick();
    // p,q and r are disjoint; the second q waits behind the first, and the third behind both.
    expect(calls[2].batches).to.deep.equal([['p', 'q'], ['r']]);
    calls[1].answer([1]);
    await tick();
    expect(calls[3].batches).to.deep.equal([['q']]);
    calls[2].answer([2, 1]);
    calls[3].answer([1]);
    await tick();
    expect(calls[4].batches).to.deep.equal([['q', 's']]);
    calls[4].answer([2]);
    expect(await Promise.all(waiting)).to.deep.equal([2, 1, 1, 2]);
  });

  it('organizations are grouped apart; a failed group fails each of its requests, and the next group runs', async () => {
    const { calls, queue } = recorder();
    const one = queue.submit('org1', req('a'));
    const two = queue.submit('org2', req('a'));
    await tick();
    expect(calls.map((x) => x.orgId)).to.deep.equal(['org1', 'org2']);
    calls[0].answer(new Error('engine down'));
    calls[1].answer([1]);
    await one.then(() => expect.fail('resolved'), (err: Error) => expect(err.message).to.equal('engine down'));
    expect(await two).to.equal(1);
    const again = queue.submit('org1', req('a'));
    await tick();
    calls[2].answer([1]);
    expect(await again).to.equal(1);
  });

  it('by default one group per org in flight: the requests that arrive meanwhile are the next group', async () => {
    const { calls, queue } = recorder('default');
    const all = [queue.submit('org', req('a')), queue.submit('org', req('b')), queue.submit('org', req('c'))];
    await tick();
    expect(calls.map((x) => x.batches)).to.deep.equal([[['a']]]);
    calls[0].answer([1]);
    await tick();
    expect(calls[1].batches).to.deep.equal([['b'], ['c']]);
    calls[1].answer([1, 1]);
    expect(await Promise.all(all)).to.deep.equal([1, 1, 1]);
  });

  it('a group holds at most 10,000 records of whole requests; a larger request goes alone', async () => {
    const { calls, queue } = recorder();
    const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
    queue.submit('org', req('x'));
    queue.submit('org', req('y'));
    for (const p of ['a', 'b', 'c', 'd', 'e']) queue.submit('org', req(...ids(p, 3000)));
    await tick();
    calls[0].answer([1]);
    await tick();
    expect(calls[2].batches.map((b) => b.length)).to.deep.equal([3000, 3000, 3000]);
  });
});
