import { expect } from 'chai';
import type { ClickHouseClient } from '@clickhouse/client';
import { randomUUID } from 'node:crypto';
import type { RunQuery } from '../../src/clickhouse/sql.ts';
import { createLogger } from '../../src/log.ts';
import { selectionOf } from '../../src/responses/compile.ts';
import { encodeResponses, insertEncoded } from '../../src/responses/encode.ts';
import { parseResponseBatch } from '../../src/responses/record.ts';
import { RollupMaintainer } from '../../src/responses/rollups/maintainer.ts';
import { hourSlicesOf, type HourSlice } from '../../src/responses/rollups/slices.ts';
import { runSummary } from '../../src/responses/summary.ts';
import { startTestService, type TestService } from './harness.ts';

/** A gate the test closes and opens; `reached` resolves when something waits at it. */
class Gate {
  private closed = false;
  private waiting: Array<() => void> = [];
  private reach: (() => void) | undefined;
  reached: Promise<void> = Promise.resolve();

  close(): void {
    this.closed = true;
    this.reached = new Promise((r) => (this.reach = r));
  }

  /** Lets through what waits now, and whatever comes while it stays open. */
  open(): void {
    this.closed = false;
    for (const go of this.waiting.splice(0)) go();
  }

  async pass(): Promise<void> {
    if (!this.closed) return;
    this.reach?.();
    await new Promise<void>((r) => this.waiting.push(r));
  }
}

/**
 * The maintainer's one mark per slice and process (maintainer.ts), on the real engine: the
 * maintainer's statements go through a client whose recompute statements, or whose take-back of
 * marks, wait at a gate the test opens, so that writes land at the exact moments that matter. At
 * each moment the slice must be pending for every reader (its marks sum above 0) unless the
 * rollup holds every write acknowledged into it, and the summary served must equal the raw one.
 */
describe('rollup marks: one per slice and process, shared by its writes', function () {
  this.timeout(120_000);
  let svc: TestService;
  let maintainer: RollupMaintainer;
  const recompute = new Gate();
  const takeBack = new Gate();
  const orgId = randomUUID();
  const survey = randomUUID();
  const createdAt = '2024-05-03T10:20:00.000001Z';
  const slice: HourSlice = hourSlicesOf([{ survey_id: survey, created_at: createdAt.replace('T', ' ').replace('Z', '') }])[0];

  before(async () => {
    svc = await startTestService();
    const real = svc.client;
    const gated = new Proxy(real, {
      get(target, prop) {
        if (prop === 'command') {
          return async (params: Parameters<ClickHouseClient['command']>[0]) => {
            // A round's hour statement (the one that reads survey_responses): one per round.
            if (params.query_id?.startsWith(maintainer.queryIdPrefix) && params.query.includes('survey_responses')) await recompute.pass();
            return target.command(params);
          };
        }
        if (prop === 'insert') {
          return async (params: Parameters<ClickHouseClient['insert']>[0]) => {
            const values = params.values as Array<{ pending?: number }>;
            if (params.table === 'survey_rollup_pending' && values.some((v) => (v.pending ?? 0) < 0)) await takeBack.pass();
            return target.insert(params);
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    maintainer = new RollupMaintainer(() => gated, createLogger('silent'));
  });
  after(async () => {
    recompute.open();
    takeBack.open();
    // A failed case can leave a write in flight, which a drain would wait for.
    await Promise.race([maintainer?.drain(), new Promise((r) => setTimeout(r, 5000))]);
    await svc?.close();
  });

  const marks = async () => Number((await (await svc.client.query({
    query: 'SELECT toInt64(sum(pending)) AS n FROM survey_rollup_pending WHERE org_id = {org:UUID} AND survey_id = {survey:UUID}',
    query_params: { org: orgId, survey },
    format: 'JSONEachRow',
  })).json<{ n: string }>())[0].n);
  const store = async (n: number) => {
    const records = parseResponseBatch(Array.from({ length: n }, () => {
      const id = randomUUID();
      return {
        id, survey_id: survey, channel_id: survey, respondent_id: id, language: 'en', completion: 'fully_completed', active: false,
        end_reason: 'completed', ended_at: '', created_at: createdAt, updated_at: createdAt, last_answer_at: '', hidden_fields: [], answers: [],
      };
    }), orgId);
    await insertEncoded(svc.client, encodeResponses(records, orgId));
  };
  const run: RunQuery = async (q) => (await svc.client.query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow' })).json();
  const selection = () => selectionOf(orgId, '*', { filters_bool: 'AND', filters: [], range: undefined });
  /** The summary as served equals the raw table's, which counts `stored`. */
  const expectExact = async (stored: number) => {
    const served = await runSummary(run, selection());
    expect(served).to.deep.equal(await runSummary(run, selection(), { rollups: false }));
    expect(Number(served[0].completion_counts.fully_completed)).to.equal(stored);
  };
  let stored = 0;
  /** One write as store.ts makes it: mark, INSERT, written. */
  const write = async (n: number) => {
    await maintainer.mark(orgId, [slice]);
    await store(n);
    stored += n;
    maintainer.written(orgId, [slice]);
  };

  it('a write that starts while the slice is recomputed adds no mark and keeps the slice pending until it is recomputed', async () => {
    recompute.close();
    await write(2);
    expect(await marks(), 'the first write marks the slice').to.equal(1);
    await recompute.reached;
    // The round is recomputing; a second write marks (nothing to add: the mark is held) and commits.
    await maintainer.mark(orgId, [slice]);
    expect(await marks(), 'one mark shared').to.equal(1);
    await store(3);
    stored += 3;
    const round = maintainer.settle();
    recompute.open();
    await round;
    expect(await marks(), 'the round does not take the mark back under a write in flight').to.equal(1);
    await expectExact(stored);
    maintainer.written(orgId, [slice]);
    await maintainer.settle();
    expect(await marks(), 'taken back once recomputed').to.equal(0);
    await expectExact(stored);
  });

  it('a write that ends during the recompute keeps the mark for the next round', async () => {
    recompute.close();
    await write(1);
    await recompute.reached;
    await write(4); // marked, stored and ended while the round reads
    // The round goes on; the next one waits, so that the state between the two can be read.
    recompute.open();
    recompute.close();
    await recompute.reached;
    expect(await marks(), 'the first round took nothing back').to.equal(1);
    await expectExact(stored);
    recompute.open();
    await expectExact(stored);
    await maintainer.settle();
    expect(await marks()).to.equal(0);
    await expectExact(stored);
  });

  it('a write that needs the mark while it is being taken back waits, then adds its own', async () => {
    takeBack.close();
    await write(1);
    await takeBack.reached;
    let marked = false;
    const marking = maintainer.mark(orgId, [slice]).then(() => (marked = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(marked, 'the mark waits for the take-back').to.equal(false);
    takeBack.open();
    await marking;
    expect(await marks(), 'its own mark, after the take-back').to.equal(1);
    await store(2);
    stored += 2;
    await expectExact(stored);
    maintainer.written(orgId, [slice]);
    await maintainer.settle();
    expect(await marks()).to.equal(0);
    await expectExact(stored);
  });
});
