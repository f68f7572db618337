import { expect } from 'chai';
import { startTestService, type TestService } from './harness.ts';

describe('releases (HTTP)', () => {
  let svc: TestService;
  let token: string;
  before(async () => {
    svc = await startTestService();
    token = await svc.token(['releases']);
  });
  after(() => svc.close());

  it('creates a release with defaults and returns it with 201', async () => {
    const before = Date.now();
    const res = await svc.request('POST', '/1.0/release', { token, body: { name: 'Spring', version: '2.4.0' } });
    expect(res.status).to.equal(201);
    expect(res.body).to.include({ name: 'Spring', version: '2.4.0', description: '' });
    expect(res.body.tags).to.deep.equal([]);
    expect(res.body.id).to.match(/^[0-9a-f-]{36}$/);
    const releasedAt = Date.parse(res.body.released_at);
    expect(releasedAt).to.be.within(before - 1000, Date.now() + 1000);
    expect(res.body.created_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('keeps every given field, with the offset normalised to UTC', async () => {
    const body = { name: 'Autumn', version: '3.0.0', description: 'big one', tags: ['web', 'ios'], released_at: '2024-05-01T12:00:00+02:00' };
    const res = await svc.request('POST', '/1.0/release', { token, body });
    expect(res.status).to.equal(201);
    expect(res.body).to.include({ name: 'Autumn', version: '3.0.0', description: 'big one', released_at: '2024-05-01T10:00:00.000Z' });
    expect(res.body.tags).to.deep.equal(['web', 'ios']);
  });

  const invalid: Array<[string, unknown, string]> = [
    ['missing name', { version: '1' }, 'name'],
    ['missing version', { name: 'x' }, 'version'],
    ['empty name', { name: '', version: '1' }, 'name'],
    ['name too long', { name: 'x'.repeat(256), version: '1' }, 'name'],
    ['description too long', { name: 'x', version: '1', description: 'd'.repeat(10_001) }, 'description'],
    ['tags not strings', { name: 'x', version: '1', tags: [1] }, 'tags[0]'],
    ['released_at without offset', { name: 'x', version: '1', released_at: '2024-05-01T12:00:00' }, 'released_at'],
    ['released_at not a date', { name: 'x', version: '1', released_at: 'yesterday' }, 'released_at'],
    // Impossible days were rolled over (2023-02-29 stored as 2023-03-01): the one parser refuses them.
    ['released_at on 2023-02-29', { name: 'x', version: '1', released_at: '2023-02-29T10:00:00Z' }, 'released_at'],
    ['released_at on 2024-04-31', { name: 'x', version: '1', released_at: '2024-04-31T10:00:00+02:00' }, 'released_at'],
    ['released_at at hour 24', { name: 'x', version: '1', released_at: '2024-05-01T24:00:00Z' }, 'released_at'],
    // DateTime64 holds 1900..2299; ClickHouse would clamp silently.
    ['released_at in 1850', { name: 'x', version: '1', released_at: '1850-01-01T00:00:00Z' }, 'released_at'],
    // A misspelt field was dropped: the release was stored dated now, without its tags.
    ['a misspelt released_at', { name: 'x', version: '1', release_at: '2024-05-01T10:00:00Z' }, 'release_at'],
    ['a misspelt tags', { name: 'x', version: '1', tag: ['web'] }, 'tag'],
    ['an array body', [{ name: 'x', version: '1' }], ''],
  ];
  for (const [name, body, path] of invalid) {
    it(`rejects ${name} with 400 naming ${path}, storing nothing`, async () => {
      const count = async () => Number((await (await svc.client.query({ query: 'SELECT count() AS c FROM releases', format: 'JSONEachRow' })).json<{ c: string }>())[0].c);
      const n = await count();
      const res = await svc.request('POST', '/1.0/release', { token, body });
      expect(res.status).to.equal(400);
      expect(res.body.error.code).to.equal('validation_error');
      expect(res.body.error.issues.map((i: { path: string }) => i.path)).to.include(path);
      expect(await count()).to.equal(n);
    });
  }

  it('words each problem plainly: a missing field is required, an unknown one is named with the accepted ones', async () => {
    const missing = await svc.request('POST', '/1.0/release', { token, body: { version: '1' } });
    expect(missing.status).to.equal(400);
    expect(missing.body.error.issues).to.deep.equal([{ path: 'name', message: 'name is required' }]);
    const unknown = await svc.request('POST', '/1.0/release', { token, body: { name: 'x', version: '1', tag: ['web'] } });
    expect(unknown.body.error.issues).to.deep.equal([{ path: 'tag', message: 'unknown field "tag"; the release body accepts name, version, description, tags, released_at' }]);
    const array = await svc.request('POST', '/1.0/release', { token, body: [{ name: 'x', version: '1' }] });
    expect(array.body.error.issues).to.deep.equal([{ path: '', message: 'the release body must be a JSON object' }]);
    const emptyTag = await svc.request('POST', '/1.0/release', { token, body: { name: 'x', version: '1', tags: [''] } });
    expect(emptyTag.body.error.issues).to.deep.equal([{ path: 'tags[0]', message: 'must not be empty' }]);
    const manyTags = await svc.request('POST', '/1.0/release', { token, body: { name: 'x', version: '1', tags: Array.from({ length: 101 }, (_, i) => `t${i}`) } });
    expect(manyTags.body.error.issues).to.deep.equal([{ path: 'tags', message: 'has at most 100 tags' }]);
    for (const limit of ['0', '1001']) {
      const list = await svc.request('GET', `/1.0/release?limit=${limit}`, { token });
      expect(list.status).to.equal(400);
      expect(list.body.error.issues).to.deep.equal([{ path: 'limit', message: 'must be 1 to 1000' }]);
    }
  });

  it('lists newest released_at first, within from/to, only for the token organization', async () => {
    const other = await svc.token(['releases'], '00000000-0000-4000-8000-000000000001');
    await svc.request('POST', '/1.0/release', { token: other, body: { name: 'other org', version: '1', released_at: '2024-03-01T00:00:00Z' } });
    for (const [v, at] of [['a', '2024-01-01T00:00:00Z'], ['b', '2024-02-01T00:00:00Z'], ['c', '2024-03-01T00:00:00Z']]) {
      await svc.request('POST', '/1.0/release', { token, body: { name: `win-${v}`, version: v, released_at: at } });
    }
    const all = await svc.request('GET', '/1.0/release', { token });
    const times = all.body.releases.map((r: { released_at: string }) => r.released_at);
    expect(times).to.deep.equal([...times].sort().reverse());
    expect(all.body.releases.map((r: { name: string }) => r.name)).to.not.include('other org');
    const windowed = await svc.request('GET', '/1.0/release?from=2024-01-15T00:00:00Z&to=2024-03-01T00:00:00Z', { token });
    expect(windowed.body.releases.map((r: { name: string }) => r.name)).to.deep.equal(['win-c', 'win-b']);
    const bad = await svc.request('GET', '/1.0/release?from=soon', { token });
    expect(bad.status).to.equal(400);
    expect(bad.body.error.issues[0].path).to.equal('from');
    for (const query of ['from=2024-02-30T00:00:00Z', 'to=2023-02-29T00:00:00Z']) {
      const impossible = await svc.request('GET', `/1.0/release?${query}`, { token });
      expect([impossible.status, impossible.body.error.issues[0].path], query).to.deep.equal([400, query.slice(0, query.indexOf('='))]);
    }
  });

  it('takes a real leap day and keeps released_at to the millisecond, whatever the offset form', async () => {
    for (const [given, stored] of [
      ['2024-02-29T23:30:00.1239-01:00', '2024-03-01T00:30:00.123Z'],
      ['2000-02-29t12:00z', '2000-02-29T12:00:00.000Z'],
      ['2024-05-01 10:00:00+0530', '2024-05-01T04:30:00.000Z'],
      ['1969-12-31T23:59:59.9999Z', '1969-12-31T23:59:59.999Z'],
    ]) {
      const res = await svc.request('POST', '/1.0/release', { token, body: { name: `leap ${given}`, version: '1', released_at: given } });
      expect([res.status, res.body.released_at], given).to.deep.equal([201, stored]);
      const listed = await svc.request('GET', `/1.0/release?from=${encodeURIComponent(stored)}&to=${encodeURIComponent(stored)}`, { token });
      expect(listed.body.releases.map((r: { name: string; released_at: string }) => [r.name, r.released_at]), given).to.deep.include([`leap ${given}`, stored]);
    }
  });
});
