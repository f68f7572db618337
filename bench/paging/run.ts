/**
 * Cursor walk and export on the query bench's data set (issue 15): walks more than 100,000
 * responses with next_cursor while new responses and new versions are written, checks that the
 * walk returns the responses that existed at its start exactly once and in order, then exports
 * the whole organization as NDJSON and samples the service's memory meanwhile.
 *
 *   node --import tsx bench/paging/run.ts                 # the 1M data set (seeded on first use)
 *   node --import tsx bench/paging/run.ts --walk 200000 --size 500
 */
import { readFileSync } from 'node:fs';
import { parseFlags, positiveInt } from '../lib/args.ts';
import { machineInfo } from '../lib/machine.ts';
import { writeResult } from '../lib/results.ts';
import { startService } from '../lib/service.ts';
import { percentile } from '../lib/stats.ts';
import { ensureDataset } from '../query/dataset.ts';
import { timedRequest, closeAgent } from '../query/http.ts';
import { deleteWritten, writeSurveyId } from '../query/writes.ts';

const USAGE = `usage: node --import tsx bench/paging/run.ts [--responses N] [--walk N] [--size N] [--data-dir DIR]
  --responses N   the query bench's data set (default 1000000; seeded into its DATA_DIR on first use)
  --walk N        responses to walk with next_cursor (default 120000)
  --size N        page size (default 1000)
  --data-dir DIR  DATA_DIR (default bench/.data/query-1M)`;

const values = parseFlags(process.argv.slice(2), { responses: { type: 'string' }, walk: { type: 'string' }, size: { type: 'string' }, 'data-dir': { type: 'string' } }, USAGE);
const responses = positiveInt('--responses', values.responses, 1_000_000);
const walkTarget = positiveInt('--walk', values.walk, 120_000);
const size = positiveInt('--size', values.size, 1000);
const log = (line: string) => console.error(`[paging] ${line}`);

const rssKb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);

const service = await startService({ dataDir: values['data-dir'] ?? `bench/.data/query-${responses >= 1e6 ? `${responses / 1e6}M` : responses}`, embeddedOnly: true, log });
try {
  const dataset = await ensureDataset(service.client, { endpoint: service.endpoint, database: service.config.clickhouse.database }, { responses, surveys: 5, days: 90 }, log);
  const org = dataset.orgId;
  const read = await service.mintToken(org, ['responses:read']);
  const write = await service.mintToken(org, ['responses:write']);

  // The reference: the first walkTarget responses in the search order, before anything is written.
  const rs = await service.client.query({
    query: 'SELECT toString(id) AS id, toString(created_at) AS c FROM survey_responses FINAL WHERE org_id = {org:UUID} ORDER BY created_at DESC, id DESC LIMIT {n:UInt32}',
    query_params: { org, n: walkTarget },
    format: 'JSONEachRow',
  });
  const reference = await rs.json<{ id: string; c: string }>();
  const initial = new Set(reference.map((r) => r.id));
  log(`reference: the newest ${reference.length} responses`);

  // Writers: new responses spread over the walked span (some before the cursor, some after) and
  // new versions of walked and not yet walked responses, while the walk runs.
  let walking = true;
  let written = 0;
  const newest = Date.parse(reference[0].c.replace(' ', 'T') + 'Z');
  const oldest = Date.parse(reference[reference.length - 1].c.replace(' ', 'T') + 'Z');
  // The query bench's write survey: deleted at the end, so the data set stays the one seeded.
  const survey = writeSurveyId(org);
  const writer = (async () => {
    for (let round = 0; walking; round++) {
      const batch = Array.from({ length: 100 }, (_, i) => {
        const at = new Date(oldest + Math.random() * (newest - oldest)).toISOString();
        return { id: crypto.randomUUID(), survey_id: survey, channel_id: survey, respondent_id: crypto.randomUUID(), language: 'en', completion: 'fully_completed', active: true, end_reason: '', ended_at: '', answers: [], created_at: at, updated_at: at, last_answer_at: '', hidden_fields: [], respondent_aliases: [`paging-${round}-${i}`] };
      });
      const res = await timedRequest(service.url, 'POST', '/1.0/survey/response', write, batch);
      if (res.status !== 200) throw new Error(`write: ${res.status} ${res.text.slice(0, 300)}`);
      written += batch.length;
    }
  })();

  const walked: string[] = [];
  const pageMs: number[] = [];
  let cursor: string | undefined;
  const t0 = performance.now();
  while (walked.filter((id) => initial.has(id)).length < reference.length) {
    const res = await timedRequest(service.url, 'SEARCH', '/1.0/survey/*/response', read, cursor === undefined ? { size } : { size, cursor });
    if (res.status !== 200) throw new Error(`search: ${res.status} ${res.text.slice(0, 300)}`);
    const body = JSON.parse(res.text) as { hits: { responses: { id: string }[] }; next_cursor?: string };
    walked.push(...body.hits.responses.map((r) => r.id));
    pageMs.push(res.ms);
    cursor = body.next_cursor;
    if (!cursor) break;
  }
  const walkSeconds = (performance.now() - t0) / 1000;
  walking = false;
  await writer;
  const ofInitial = walked.filter((id) => initial.has(id));
  const duplicates = walked.length - new Set(walked).size;
  const inOrder = ofInitial.every((id, i) => id === reference[i].id);
  log(`walked ${walked.length} responses in ${pageMs.length} pages, ${walkSeconds.toFixed(1)} s; ${written} written meanwhile; duplicates ${duplicates}; initial ones in order: ${inOrder} (${ofInitial.length}/${reference.length})`);

  // Export of the whole organization, the service's RSS sampled every 100 ms.
  const pid = service.servicePid!;
  const before = rssKb(pid);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssKb(pid))), 100);
  const e0 = performance.now();
  const res = await fetch(`${service.url}/1.0/survey/*/response/export`, { method: 'POST', headers: { authorization: `Bearer ${read}`, 'content-type': 'application/json' }, body: '{}' });
  let bytes = 0;
  let lines = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.length;
    for (const b of chunk) if (b === 10) lines++;
  }
  clearInterval(sampler);
  const exportSeconds = (performance.now() - e0) / 1000;
  const total = Number((await (await service.client.query({ query: 'SELECT count() AS n FROM survey_responses FINAL WHERE org_id = {org:UUID}', query_params: { org }, format: 'JSONEachRow' })).json<{ n: string }>())[0].n);
  log(`export: ${lines} lines (${total} responses stored), ${(bytes / 1e9).toFixed(2)} GB in ${exportSeconds.toFixed(1)} s; service RSS ${Math.round(before / 1024)} MB before, ${Math.round(peak / 1024)} MB at most`);

  const sortedMs = [...pageMs].sort((a, b) => a - b);
  const result = {
    machine: await machineInfo(service.client),
    walk: {
      target: walkTarget, size, pages: pageMs.length, walked: walked.length, written_meanwhile: written, seconds: walkSeconds,
      page_ms: { p50: percentile(sortedMs, 50), p95: percentile(sortedMs, 95), max: sortedMs[sortedMs.length - 1] },
      duplicates, initial_seen: ofInitial.length, initial_expected: reference.length, initial_in_order: inOrder,
    },
    export: { lines, stored: total, bytes, seconds: exportSeconds, rss_mb_before: before / 1024, rss_mb_peak: peak / 1024 },
  };
  console.log(JSON.stringify(result, null, 2));
  console.log(`result: ${writeResult('paging', result)}`);
  await deleteWritten(service.client, org);
  if (duplicates !== 0 || !inOrder || ofInitial.length !== reference.length || lines !== total) process.exitCode = 1;
} finally {
  closeAgent();
  await service.stop();
}
