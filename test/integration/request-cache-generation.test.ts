import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { compiled, ParamBag } from '../../src/clickhouse/sql.ts';
import { cachedRequest, forgetCachedAnswers, requestRunners } from '../../src/query/request-cache.ts';
import { startTestService, type TestService } from './harness.ts';

/**
 * The deletion generation reaches the engine (src/query/request-cache.ts, invariant 3): every
 * query a cached read runs through `run` carries it as `query_cache_tag` (with ClickHouse's query
 * cache, queries with different tags are different entries), `fresh` carries no query-cache
 * setting, and a deletion changes the tag of the reads after it and is not answered from the entry
 * cached before it. (The embedded engine has no query cache, clickhouse-local's is of size 0: the
 * tags are read back from system.query_log.)
 */
describe('request cache: the deletion generation in the engine query-cache key (query_cache_tag)', function () {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(async () => svc?.close());

  /** The settings the engine logged for the queries that selected `marker`, oldest first. */
  async function loggedSettings(marker: string) {
    await svc.client.command({ query: 'SYSTEM FLUSH LOGS' });
    const rs = await svc.client.query({
      query: `SELECT Settings['query_cache_tag'] AS tag, Settings['use_query_cache'] AS use FROM system.query_log
              WHERE type = 'QueryFinish' AND query LIKE {m:String} AND query NOT LIKE '%query_log%' ORDER BY event_time_microseconds`,
      query_params: { m: `%${marker}%` },
      format: 'JSONEachRow',
    });
    return rs.json<{ tag: string; use: string }>();
  }

  it('cachedRequest: run is tagged with the generation, fresh is not; after forgetCachedAnswers the read runs again under a new tag', async () => {
    const marker = `gen_${randomUUID().replaceAll('-', '')}`;
    // The marker is in the SQL text (an alias), so the log finds these queries.
    const query = () => compiled(`SELECT 1 AS ${marker}`, new ParamBag());
    let computed = 0;
    const read = () =>
      cachedRequest(svc.client, 'generation test', { marker }, {}, async ({ run, fresh }) => {
        computed++;
        await fresh(query());
        return run(query());
      });
    await read();
    expect(computed).to.equal(1);
    await forgetCachedAnswers(svc.client);
    await read();
    expect(computed, 'a read after the deletion is not answered from the entry cached before it').to.equal(2);
    const logged = await loggedSettings(marker);
    expect(logged).to.have.length(4);
    const [fresh1, run1, fresh2, run2] = logged;
    for (const f of [fresh1, fresh2]) expect(f).to.deep.equal({ tag: '', use: '' });
    for (const r of [run1, run2]) {
      expect(r.use).to.equal('1');
      expect(r.tag).to.not.equal('');
    }
    expect(run2.tag, 'the tag after the deletion').to.not.equal(run1.tag);
  });

  it('requestRunners (the release impact): run reads the generation and is tagged with it', async () => {
    const marker = `gen_${randomUUID().replaceAll('-', '')}`;
    const { run } = requestRunners(svc.client, {});
    await run(compiled(`SELECT 1 AS ${marker}`, new ParamBag()));
    await forgetCachedAnswers(svc.client);
    await run(compiled(`SELECT 2 AS ${marker}`, new ParamBag()));
    const logged = await loggedSettings(marker);
    expect(logged).to.have.length(2);
    expect(logged[0].tag).to.not.equal('');
    expect(logged[1].tag).to.not.equal(logged[0].tag);
  });
});
