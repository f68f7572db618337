import { expect } from 'chai';
import { userIdForAlias, groupIdFor } from '../../src/events/rows.ts';
import { runSeedCommand } from '../../src/seed/cli.ts';
import { seedEvents } from '../../src/seed/events.ts';
import { startTestService, type TestService } from './harness.ts';

/**
 * `seed --events`: rows as the write path would store them (ids of aliases and groups included),
 * the ingest bench's mix of types, and the derived tables filled, so the event reads see seeded
 * data as real data.
 */
describe('seed: synthetic events', function () {
  this.timeout(300_000);
  let svc: TestService;
  const N = 5000;
  const query = async <T = Record<string, any>>(sql: string) =>
    (await (await svc.client.query({ query: sql, query_params: { org: svc.orgId }, format: 'JSONEachRow' })).json<T>());

  before(async () => {
    svc = await startTestService();
    const result = await seedEvents(svc.client, { orgId: svc.orgId, events: N, days: 30 });
    expect(result.inserted).to.equal(N);
  });
  after(async () => svc?.close());

  it('writes the ingest mix of types, within the day span, with the fields each type carries', async () => {
    const mix = await query<{ type: string; c: string; bad: string; oldest: string }>(
      `SELECT type, count() AS c, toString(min(timestamp)) AS oldest,
              countIf(multiIf(type = 'track', event_name = '', type = 'page', url = '', type = 'screen', screen_name = '',
                type IN ('group.assign', 'group.unassign'), group_name = '' OR user_alias = '', type = 'identify', user_alias = '',
                type = 'copilot', agent_id = '' OR event_name = '', 0) OR (anonymous = 1) != (user_alias = '')) AS bad
       FROM events WHERE org_id = {org:UUID} GROUP BY type ORDER BY type`,
    );
    const share = Object.fromEntries(mix.map((m) => [m.type, Number(m.c) / N]));
    expect(Object.keys(share).sort()).to.deep.equal(['copilot', 'group.assign', 'group.unassign', 'identify', 'page', 'screen', 'track']);
    expect(share.track).to.be.within(0.4, 0.5);
    expect(share.page).to.be.within(0.23, 0.33);
    expect(mix.every((m) => Number(m.bad) === 0)).to.equal(true);
    for (const m of mix) expect(Date.parse(m.oldest.replace(' ', 'T') + 'Z')).to.be.above(Date.now() - 30 * 86_400_000 - 60_000);
  });

  it('gives users and groups the ids of the write path, and fills their properties and memberships', async () => {
    const users = await query<{ user_alias: string; user_id: string }>(`SELECT DISTINCT user_alias, toString(user_id) AS user_id FROM events WHERE org_id = {org:UUID} AND user_alias != '' LIMIT 50`);
    for (const u of users) expect(u.user_id).to.equal(userIdForAlias(svc.orgId, u.user_alias));
    const groups = await query<{ group_type: string; group_name: string; group_id: string }>(`SELECT DISTINCT group_type, group_name, toString(group_id) AS group_id FROM events WHERE org_id = {org:UUID} AND group_name != '' LIMIT 50`);
    expect(groups.length).to.be.above(0);
    for (const g of groups) expect(g.group_id).to.equal(groupIdFor(svc.orgId, g.group_type, g.group_name));
    const read = await svc.token(['events:read']);
    const profile = await svc.request('GET', '/1.0/user/user-1', { token: read });
    expect(profile.status).to.equal(200);
    expect(profile.body.properties).to.include.keys('email', 'plan', 'seats', 'country');
  });

  it('runs as `tallyhouse seed --events N` with progress and a result line', async () => {
    const out: string[] = [];
    const err: string[] = [];
    await runSeedCommand(svc.client, ['--events', '1200', '--org', svc.orgId], { out: (l) => out.push(l), err: (l) => err.push(l) });
    expect(out.at(-1)).to.match(/^seeded 1,200 events of \d+ users in [\d.]+ s/);
    const [{ c }] = await query<{ c: string }>('SELECT count() AS c FROM events WHERE org_id = {org:UUID}');
    expect(Number(c)).to.equal(N + 1200);
  });
});

/** The CLI on an embedded 2-shard cluster: the events are numbered through the cluster's database (was: "Distributed doesn't support mutations", exit 1). */
describe('seed --events on an embedded cluster (CLI)', function () {
  this.timeout(300_000);
  it('seeds and exits 0', async () => {
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const { mkdtemp, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = await mkdtemp(join(tmpdir(), 'seed-cluster-'));
    try {
      const { stdout } = await promisify(execFile)(process.execPath, ['bin/tallyhouse.js', 'seed', '--events', '100', '--org', '5eed0000-0000-4000-8000-00000000000a'], {
        env: { ...process.env, DATA_DIR: dir, TALLYHOUSE_EMBEDDED_SHARDS: '2', TALLYHOUSE_DEMO: '0', LOG_LEVEL: 'warn' },
      });
      expect(stdout).to.match(/^seeded 100 events of \d+ users/m);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
