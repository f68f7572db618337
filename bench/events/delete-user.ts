/**
 * What `DELETE /1.0/user/<alias>` costs on a data set of bench/events (10M events of one
 * organization): the wall time of the request (from Node, over HTTP) and the engine's CPU for it,
 * for the user with the most events, one with the median count and one with the fewest. The
 * deletion rewrites the parts that hold the user's events before its 202 (src/events/delete-user.ts),
 * so its time follows the parts the user's events are spread over, not the user's event count.
 *
 * It deletes data: run it on a copy of the data set (`cp -a`), never on the one other benches reuse.
 * `--repo` starts another checkout's service on the same kind of copy, for a before/after pair.
 *
 *   node --import tsx bench/events/delete-user.ts --data-dir <copy of an events data set> [--repo DIR]
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseFlags } from '../lib/args.ts';
import { cpuSeconds } from '../lib/proc.ts';
import { startService } from '../lib/service.ts';

const USAGE = 'usage: node --import tsx bench/events/delete-user.ts --data-dir DIR [--repo DIR]';
const flags = parseFlags(process.argv.slice(2), { 'data-dir': { type: 'string' }, repo: { type: 'string' } }, USAGE);
if (!flags['data-dir']) {
  process.stderr.write(`${USAGE}\n`);
  process.exit(2);
}
const dataDir = resolve(flags['data-dir']);
const stateFile = join(dataDir, 'bench-events.json');
if (!existsSync(stateFile)) {
  process.stderr.write(`${dataDir} holds no bench/events data set (no bench-events.json)\n`);
  process.exit(2);
}
const { orgId } = JSON.parse(readFileSync(stateFile, 'utf8')) as { orgId: string };
const log = (line: string) => process.stderr.write(`[delete-user] ${line}\n`);

const svc = await startService({ dataDir, embeddedOnly: true, log, repo: flags.repo ? resolve(flags.repo) : undefined });
try {
  const rows = async <T>(query: string): Promise<T[]> =>
    (await svc.client.query({ query, query_params: { org: orgId }, format: 'JSONEachRow' })).json<T>();
  const users = await rows<{ alias: string; n: string }>(
    `SELECT user_alias AS alias, count() AS n FROM events WHERE org_id = {org:UUID} AND user_alias != '' GROUP BY user_alias ORDER BY n DESC, alias`,
  );
  const [parts] = await rows<{ parts: string; rows: string }>(
    "SELECT count() AS parts, sum(rows) AS rows FROM system.parts WHERE database = currentDatabase() AND table = 'events' AND active",
  );
  log(`${users.length.toLocaleString('en-US')} users; events table: ${parts.parts} active parts, ${Number(parts.rows).toLocaleString('en-US')} rows`);
  const picks = [
    { which: 'most events', user: users[0] },
    { which: 'median', user: users[Math.floor(users.length / 2)] },
    { which: 'fewest events', user: users[users.length - 1] },
  ];
  const token = await svc.mintToken(orgId, ['events']);
  const results: { which: string; events: number; ms: number; engineCpuS: number; status: number }[] = [];
  for (const { which, user } of picks) {
    const cpu0 = cpuSeconds(svc.enginePid()) ?? NaN;
    const t0 = performance.now();
    const answer = await fetch(new URL(`/1.0/user/${encodeURIComponent(user.alias)}`, svc.url), { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
    await answer.text();
    const res = { status: answer.status, ms: performance.now() - t0 };
    const cpu = (cpuSeconds(svc.enginePid()) ?? NaN) - cpu0;
    results.push({ which, events: Number(user.n), ms: res.ms, engineCpuS: cpu, status: res.status });
    log(`${which}: ${Number(user.n).toLocaleString('en-US')} events, ${res.status} in ${res.ms.toFixed(0)} ms, engine CPU ${cpu.toFixed(2)} s`);
  }
  console.log(JSON.stringify({ dataDir, repo: flags.repo ?? null, load: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3), results }, null, 2));
} finally {
  await svc.stop();
}
