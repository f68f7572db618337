import { expect } from 'chai';
import Bottleneck from 'bottleneck';
import { takeOne } from '../../src/server/rate-limit.ts';

describe('rate limit: taking from a bottleneck reservoir', () => {
  it('takes from the local datastore synchronously, leaving the reservoir bottleneck reports', async () => {
    const limiter = new Bottleneck({ reservoir: 3, reservoirRefreshAmount: 3, reservoirRefreshInterval: 60_000 });
    try {
      const taken = [takeOne(limiter), takeOne(limiter), takeOne(limiter), takeOne(limiter)];
      // Synchronous on the local store (no timer hop): the numbers themselves, not promises.
      expect(taken).to.deep.equal([2, 1, 0, -1]);
      expect(await limiter.currentReservoir()).to.equal(-1);
      // Mixed with bottleneck's own call: one reservoir.
      expect(await limiter.incrementReservoir(-1)).to.equal(-2);
      expect(takeOne(limiter)).to.equal(-3);
      // The refill (bottleneck's heartbeat sets the reservoir) is seen by the next take.
      await limiter.updateSettings({ reservoir: 3 });
      expect(takeOne(limiter)).to.equal(2);
    } finally {
      await limiter.disconnect(false);
    }
  });

  it('goes through incrementReservoir where the store is not the local one', async () => {
    const limiter = new Bottleneck({ reservoir: 2 });
    try {
      (limiter as unknown as { datastore: string }).datastore = 'other';
      const first = takeOne(limiter);
      expect(first).to.be.instanceOf(Promise);
      expect(await first).to.equal(1);
    } finally {
      await limiter.disconnect(false);
    }
  });
});
