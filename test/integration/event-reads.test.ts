import { expect } from 'chai';
import { EVENT_KEY_OPERATORS, type EventFilterKey } from '../../src/events/read/filters.ts';
import type { Operator } from '../../src/query/operators.ts';
import { startTestService, type TestService } from './harness.ts';

/**
 * The event reads over HTTP, on events sent through POST /1.0/event: every filter key x operator
 * against a reference predicate over the stored events, every group_by rule and metric against
 * counts computed here, cursors under concurrent ingestion, tenant isolation, user profiles.
 */
const DAY = 86_400_000;
// Events may carry a timestamp up to 7 days old: the fixture spreads over the last 3 days.
const base = Math.floor((Date.now() - 3 * DAY) / 60_000) * 60_000;
const at = (minutes: number) => new Date(base + minutes * 60_000).toISOString();

const FIXTURE = [
  { type: 'identify', user_alias: 'user-1', timestamp: at(0), properties: { plan: 'pro', seats: 10, beta: true, trial_end: '2026-01-15T00:00:00Z' }, context: { locale: 'en-US', timezone: 'Europe/Paris' } },
  { type: 'identify', user_alias: 'user-2', timestamp: at(1), properties: { plan: 'free', seats: 2, trial_end: '2025-06-01' }, context: { locale: 'fr-FR' } },
  { type: 'identify', user_alias: 'user-3', timestamp: at(2), properties: { plan: 'pro', beta: null } },
  { type: 'group.assign', user_alias: 'user-1', timestamp: at(3), group_type: 'company', group_name: 'Acme' },
  { type: 'group.assign', user_alias: 'user-1', timestamp: at(4), group_type: 'company', group_name: 'Globex' },
  { type: 'group.assign', user_alias: 'user-2', timestamp: at(5), group_type: 'company', group_name: 'Acme' },
  { type: 'group.assign', user_alias: 'user-3', timestamp: at(6), group_type: 'team', group_name: 'Core' },
  { type: 'track', user_alias: 'user-1', timestamp: at(60), event_name: 'signup', properties: { plan: 'pro', amount: 10, ok: true, when: '2026-03-01T10:00:00Z' }, context: { locale: 'en-US' } },
  { type: 'track', user_alias: 'user-2', timestamp: at(24 * 60), event_name: 'purchase', properties: { amount: 5.5, label: 'Hello World', when: '2025-12-24' } },
  { type: 'track', timestamp: at(24 * 60 + 5), event_name: 'purchase', properties: { amount: '5', label: 'another' } },
  { type: 'track', user_alias: 'user-3', timestamp: at(24 * 60 + 10), event_name: 'Purchase Completed', properties: { amount: 10.0, ok: false } },
  { type: 'page', user_alias: 'user-1', timestamp: at(30 * 60), url: 'https://example.com/pricing', context: { timezone: 'Europe/Paris' } },
  { type: 'page', user_alias: 'user-3', timestamp: at(30 * 60 + 1), url: 'https://example.com/docs' },
  { type: 'screen', user_alias: 'user-2', timestamp: at(48 * 60), screen_name: 'Home' },
  { type: 'screen', timestamp: at(48 * 60 + 1), screen_name: 'Settings' },
  { type: 'copilot', user_alias: 'user-1', timestamp: at(49 * 60), event_name: 'service_copilot_user_prompt', agent_id: 'a1', conversation_id: 'c1', copilot_session_id: 's1', prompt: 'hi' },
  { type: 'copilot', user_alias: 'user-2', timestamp: at(49 * 60 + 1), event_name: 'service_copilot_conversion', agent_id: 'a2' },
  { type: 'group.unassign', user_alias: 'user-3', timestamp: at(50 * 60), group_type: 'team', group_name: 'Core' },
];

type Rec = Record<string, any>;

describe('Event reads (HTTP)', () => {
  let svc: TestService;
  let write: string;
  let read: string;
  let all: Rec[];
  const props: Record<string, Rec> = {};
  const groups: Record<string, string[]> = {};
  const groupNames: Record<string, { type: string; name: string }[]> = {};
  let groupIds: Record<string, string>;
  let userIds: Record<string, string>;

  const search = (body: unknown, token = read) => svc.request('SEARCH', '/1.0/event', { token, body });
  const search_ = (body: unknown) => svc.request('POST', '/1.0/event/search', { token: read, body });
  const aggregate = (body: unknown, token = read) => svc.request('SEARCH', '/1.0/event/aggregation', { token, body });

  before(async () => {
    svc = await startTestService();
    write = await svc.token(['events']);
    read = await svc.token(['events:read']);
    const sent = await svc.request('POST', '/1.0/event', { token: write, body: FIXTURE });
    expect(sent.status).to.equal(200);
    // Another organization, with the same aliases, names and properties: never seen by `read`.
    const other = await svc.token(['events'], crypto.randomUUID());
    expect((await svc.request('POST', '/1.0/event', { token: other, body: FIXTURE })).status).to.equal(200);

    const res = await search({ size: 1000 });
    expect(res.status).to.equal(200);
    all = res.body.hits.events;
    expect(all).to.have.length(FIXTURE.length);
    userIds = Object.fromEntries(all.filter((r) => r.user_alias).map((r) => [r.user_alias, r.user_id]));
    groupIds = {};
    for (const alias of ['user-1', 'user-2', 'user-3']) {
      const profile = await svc.request('GET', `/1.0/user/${alias}`, { token: read });
      expect(profile.status).to.equal(200);
      props[alias] = profile.body.properties;
      groups[alias] = profile.body.groups.map((g: Rec) => g.group_id);
      groupNames[alias] = profile.body.groups.map((g: Rec) => ({ type: g.group_type, name: g.group_name }));
      for (const g of profile.body.groups) groupIds[g.group_name] = g.group_id;
    }
  });
  after(() => svc.close());

  describe('search', () => {
    it('returns every event as stored, newest timestamp first, with the fields its type carries', () => {
      const times = all.map((r) => r.timestamp);
      expect(times).to.deep.equal([...times].sort().reverse());
      const signup = all.find((r) => r.event_name === 'signup')!;
      expect(signup).to.deep.include({ type: 'track', user_alias: 'user-1', anonymous: false, properties: { plan: 'pro', amount: 10, ok: true, when: '2026-03-01T10:00:00Z' }, context: { locale: 'en-US' } });
      expect(signup.timestamp).to.equal(at(60).replace(/\.(\d{3})Z$/, '.$1000Z'));
      expect(signup).to.not.have.any.keys('url', 'screen_name', 'group_name', 'agent_id', 'prompt');
      const prompt = all.find((r) => r.type === 'copilot' && r.agent_id === 'a1')!;
      expect(prompt).to.deep.include({ event_name: 'service_copilot_user_prompt', conversation_id: 'c1', copilot_session_id: 's1', prompt: 'hi' });
      const anonymous = all.find((r) => r.screen_name === 'Settings')!;
      expect(anonymous.anonymous).to.equal(true);
      expect(anonymous).to.not.have.any.keys('user_alias', 'event_name', 'context');
      expect(all.find((r) => r.type === 'group.assign')).to.include.keys('group_type', 'group_name');
    });

    it('counts every match in hits.total and pages with size', async () => {
      const res = await search({ size: 3 });
      expect(res.body.hits.total.value).to.equal(FIXTURE.length);
      expect(res.body.hits.events.map((r: Rec) => r.event_id)).to.deep.equal(all.slice(0, 3).map((r) => r.event_id));
      expect(res.body.next_cursor).to.be.a('string');
      const none = await search({ size: 0 });
      expect(none.body.hits).to.deep.equal({ total: { value: FIXTURE.length }, events: [] });
      expect(none.body).to.not.have.property('next_cursor');
      const last = await search({ size: FIXTURE.length });
      expect(last.body).to.not.have.property('next_cursor');
    });

    it('is also served as POST /1.0/event/search', async () => {
      const res = await svc.request('POST', '/1.0/event/search', { token: read, body: { size: 1 } });
      expect(res.status).to.equal(200);
      expect(res.body.hits.events[0].event_id).to.equal(all[0].event_id);
    });

    it('takes a range on timestamp, both ends inclusive', async () => {
      const res = await search({ size: 100, range: { field: 'timestamp', start: at(60), end: at(30 * 60) } });
      const expected = all.filter((r) => Date.parse(r.timestamp) >= Date.parse(at(60)) && Date.parse(r.timestamp) <= Date.parse(at(30 * 60)));
      expect(res.body.hits.events.map((r: Rec) => r.event_id)).to.deep.equal(expected.map((r) => r.event_id));
      expect(expected.length).to.be.within(2, all.length - 2);
    });

    it('needs the events:read scope', async () => {
      expect((await search({}, write)).status).to.equal(403);
      expect((await aggregate({ group_by: [{ field: 'type' }] }, write)).status).to.equal(403);
      expect((await svc.request('GET', '/1.0/user/user-1', { token: write })).status).to.equal(403);
    });

    it('rejects bad bodies with a 400 naming the problem', async () => {
      const cases: [unknown, RegExp][] = [
        [{ size: 1001 }, /size must be 0 to 1000/],
        [{ filter: [] }, /unknown field "filter"/],
        [{ filters: [{ key: 'nope', operator: 'eq', value: 'x' }] }, /unknown key "nope"/],
        [{ filters: [{ key: 'type', operator: 'contains', value: 'x' }] }, /it accepts eq, neq, in, not_in/],
        [{ filters: [{ key: 'type', operator: 'eq', value: 'click' }] }, /must be one of identify/],
        [{ filters: [{ key: 'property', operator: 'eq', value: 'x' }] }, /needs a "property_key"/],
        [{ filters: [{ key: 'user_id', operator: 'eq', value: 'not-a-uuid' }] }, /must be a UUID/],
        [{ filters: [{ key: 'property', property_key: 'a', operator: 'in', value: 1 }] }, /takes "values"/],
        [{ range: { field: 'created_at' } }, /range.field must be "timestamp"/],
        [{ cursor: 'garbage' }, /cursor/],
      ];
      for (const [body, message] of cases) {
        const res = await search(body);
        expect(res.status, JSON.stringify(body)).to.equal(400);
        const text = [res.body.error.message, ...(res.body.error.issues ?? []).map((i: Rec) => `${i.path}: ${i.message}`)].join('\n');
        expect(text, JSON.stringify(body)).to.match(message);
      }
    });
  });

  describe('filters: every key x operator against a reference predicate', () => {
    const VALUES: Record<EventFilterKey, { value: () => unknown; values: () => unknown[]; property_key?: Partial<Record<Operator, string>> }> = {
      type: { value: () => 'track', values: () => ['page', 'screen'] },
      user_id: { value: () => userIds['user-1'], values: () => [userIds['user-1'], userIds['user-2']] },
      group_id: { value: () => groupIds.Acme, values: () => [groupIds.Globex] },
      event_name: { value: () => 'purchase', values: () => ['signup', 'purchase'] },
      user_alias: { value: () => 'user-1', values: () => ['user-2', 'user-3'] },
      url: { value: () => 'https://example.com/pricing', values: () => ['https://example.com/docs'] },
      screen_name: { value: () => 'Home', values: () => ['Home', 'Nowhere'] },
      context_locale: { value: () => 'en-US', values: () => ['fr-FR'] },
      context_timezone: { value: () => 'Europe/Paris', values: () => ['Europe/Paris', 'Asia/Tokyo'] },
      agent_id: { value: () => 'a1', values: () => ['a2'] },
      conversation_id: { value: () => 'c1', values: () => ['c1', 'c9'] },
      property: {
        value: () => 'pro', values: () => [10, 'Hello World'],
        property_key: { eq: 'plan', neq: 'plan', in: 'amount', not_in: 'amount', null: 'label', not_null: 'label', contains: 'label', not_contains: 'label', lt: 'amount', gt: 'label', before: 'when', after: 'when' },
      },
      user_property: {
        value: () => 'pro', values: () => [2, true],
        property_key: { eq: 'plan', neq: 'plan', in: 'seats', not_in: 'seats', null: 'beta', not_null: 'beta', contains: 'plan', not_contains: 'plan', lt: 'seats', gt: 'plan', before: 'trial_end', after: 'trial_end' },
      },
    };
    // Operator-specific values where the key's default would not tell the cases apart.
    const SPECIAL: Partial<Record<string, unknown>> = {
      'event_name contains': 'PURCH', 'user_alias contains': 'R-2', 'url contains': 'PRICING', 'screen_name contains': 'hom',
      'property contains': 'world', 'property lt': 6, 'property gt': 'B', 'property before': '2026-01-01T00:00:00Z', 'property after': '2025-12-24T00:00:00Z',
      'user_property contains': 'RE', 'user_property lt': 5, 'user_property gt': 'g', 'user_property before': '2025-12-31T00:00:00+01:00', 'user_property after': '2025-12-31',
    };

    const field = (key: EventFilterKey, r: Rec, pk?: string): unknown => {
      switch (key) {
        case 'group_id': return r.user_alias ? groups[r.user_alias] ?? [] : [];
        case 'context_locale': return r.context?.locale ?? null;
        case 'context_timezone': return r.context?.timezone ?? null;
        case 'property': return r.properties[pk!] ?? null;
        case 'user_property': return r.user_alias ? props[r.user_alias]?.[pk!] ?? null : null;
        default: return r[key] ?? null;
      }
    };
    const typedEq = (a: unknown, b: unknown) => a !== null && typeof a === typeof b && a === b;
    const isDate = (x: unknown): x is string => typeof x === 'string' && /^\d{4}-\d{2}-\d{2}/.test(x);
    const positive = (key: EventFilterKey, op: Operator, v: unknown, value: any, values: any[]): boolean => {
      if (key === 'group_id') {
        const ids = v as string[];
        return op === 'eq' ? ids.includes(value) : values.some((x) => ids.includes(x));
      }
      switch (op) {
        case 'eq': return typedEq(v, value);
        case 'in': return values.some((x) => typedEq(v, x));
        case 'null': return v === null;
        case 'contains': return typeof v === 'string' && v.toLowerCase().includes(String(value).toLowerCase());
        case 'lt': return typeof v === typeof value && v !== null && (v as any) < value;
        case 'gt': return typeof v === typeof value && v !== null && (v as any) > value;
        case 'before': return isDate(v) && Date.parse(v) < Date.parse(value);
        case 'after': return isDate(v) && Date.parse(v) > Date.parse(value);
        default: throw new Error(op);
      }
    };
    const NEG: Partial<Record<Operator, Operator>> = { neq: 'eq', not_in: 'in', not_null: 'null', not_contains: 'contains' };

    for (const [key, operators] of Object.entries(EVENT_KEY_OPERATORS) as [EventFilterKey, readonly Operator[]][]) {
      for (const operator of operators) {
        it(`${key} ${operator}`, async () => {
          const spec = VALUES[key];
          const op = NEG[operator] ?? operator;
          const pk = spec.property_key?.[operator];
          const value = SPECIAL[`${key} ${op}`] ?? spec.value();
          const values = spec.values();
          const filter: Rec = { key, operator, ...(pk ? { property_key: pk } : {}) };
          if (op === 'in') filter.values = values;
          else if (op !== 'null') filter.value = value;
          const expected = all.filter((r) => positive(key, op, field(key, r, pk), value, values) !== (op !== operator)).map((r) => r.event_id);
          const res = await search({ size: 1000, filters: [filter] });
          expect(res.status, JSON.stringify(res.body)).to.equal(200);
          expect(res.body.hits.events.map((r: Rec) => r.event_id)).to.deep.equal(expected);
          expect(res.body.hits.total.value).to.equal(expected.length);
          // Neither nothing nor everything: the case tells matching from non-matching events.
          expect(expected.length, JSON.stringify(filter)).to.be.within(1, all.length - 1);
        });
      }
    }

    it('compares property values by their JSON type: 5 (number) is not "5" (string), 10 = 10.0', async () => {
      const ids = async (value: unknown) =>
        (await search({ size: 100, filters: [{ key: 'property', property_key: 'amount', operator: 'eq', value }] })).body.hits.events.map((r: Rec) => r.properties.amount);
      expect(await ids('5')).to.deep.equal(['5']);
      expect(await ids(5)).to.deep.equal([]);
      expect((await ids(10)).sort()).to.deep.equal([10, 10]);
    });

    it('matches boolean property values by value, never the string "true"', async () => {
      const oks = async (filter: Rec) => (await search({ size: 100, filters: [{ key: 'property', property_key: 'ok', ...filter }] })).body.hits.events.map((r: Rec) => r.properties.ok);
      expect(await oks({ operator: 'eq', value: true })).to.deep.equal([true]);
      expect(await oks({ operator: 'eq', value: false })).to.deep.equal([false]);
      expect(await oks({ operator: 'eq', value: 'true' })).to.deep.equal([]);
      expect((await oks({ operator: 'in', values: [false, 'x', 1, true] })).sort()).to.deep.equal([false, true]);
      expect(await oks({ operator: 'neq', value: true })).to.not.include(true);
    });

    it('joins filters with filters_bool', async () => {
      const filters = [{ key: 'type', operator: 'eq', value: 'page' }, { key: 'user_alias', operator: 'eq', value: 'user-2' }];
      const and = await search({ size: 100, filters });
      const or = await search({ size: 100, filters_bool: 'OR', filters });
      expect(and.body.hits.total.value).to.equal(0);
      expect(or.body.hits.total.value).to.equal(all.filter((r) => r.type === 'page' || r.user_alias === 'user-2').length);
    });
  });

  describe('aggregation', () => {
    const counts = (records: Rec[], key: (r: Rec) => (string | null)[] | string | null) => {
      const out: Record<string, { doc_count: number; users: Set<string> }> = {};
      for (const r of records) {
        const keys = key(r);
        for (const k of Array.isArray(keys) ? [...new Set(keys)] : [keys]) {
          if (k === null) continue;
          (out[k] ??= { doc_count: 0, users: new Set() }).doc_count++;
          out[k].users.add(r.user_id);
        }
      }
      return Object.entries(out).map(([key, c]) => ({ key, doc_count: c.doc_count, unique_users: c.users.size }))
        .sort((a, b) => b.doc_count - a.doc_count || Buffer.compare(Buffer.from(a.key), Buffer.from(b.key)));
    };
    const asKey = (x: unknown): string | null => (x === undefined || x === null ? null : typeof x === 'string' ? x : JSON.stringify(x));
    const RULES: [string, Rec, (r: Rec) => (string | null)[] | string | null][] = [
      ['type', { field: 'type' }, (r) => r.type],
      ['event_name', { field: 'event_name' }, (r) => r.event_name ?? null],
      ['context_locale', { field: 'context_locale' }, (r) => r.context?.locale ?? null],
      ['property', { field: 'property', property_key: 'amount' }, (r) => asKey(r.properties.amount)],
      ['user_property', { field: 'user_property', property_key: 'plan' }, (r) => asKey(r.user_alias ? props[r.user_alias]?.plan : null)],
      ['group', { field: 'group', group_type: 'company' }, (r) => (r.user_alias ? groupNames[r.user_alias].filter((g) => g.type === 'company').map((g) => g.name) : [])],
    ];
    for (const [name, rule, key] of RULES) {
      it(`groups by ${name}, with count and unique_users`, async () => {
        const res = await aggregate({ group_by: [rule], metrics: ['count', 'unique_users'] });
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        expect(res.body.hits.total.value).to.equal(all.length);
        expect(res.body.unique_users).to.equal(new Set(all.map((r) => r.user_id)).size);
        expect(res.body.aggregations).to.deep.include({ field: rule.field, other_doc_count: 0 });
        expect(res.body.aggregations.buckets).to.deep.equal(counts(all, key));
        expect(res.body.aggregations.buckets.length).to.be.at.least(2);
      });
    }

    it('counts a user in two groups in both, and once in the parent bucket', async () => {
      const res = await aggregate({ group_by: [{ field: 'event_name' }, { field: 'group', group_type: 'company' }], filters: [{ key: 'user_alias', operator: 'eq', value: 'user-1' }] });
      const signup = res.body.aggregations.buckets.find((b: Rec) => b.key === 'signup');
      expect(signup.doc_count).to.equal(1);
      expect(signup.aggregations.buckets).to.deep.equal([{ key: 'Acme', doc_count: 1 }, { key: 'Globex', doc_count: 1 }]);
      expect(res.body).to.not.have.property('unique_users');
    });

    it('builds dense, range-aligned date histograms, nested under terms', async () => {
      const start = new Date(base).toISOString();
      const end = new Date(base + 4 * DAY - 1).toISOString();
      const res = await aggregate({
        range: { field: 'timestamp', start, end },
        group_by: [{ field: 'type' }, { field: 'timestamp', date_histogram_min_interval: 'day', date_histogram_buckets: 100 }],
        metrics: ['unique_users'],
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const track = res.body.aggregations.buckets.find((b: Rec) => b.key === 'track');
      const days = track.aggregations;
      expect(days.field).to.equal('timestamp');
      expect(days.interval).to.equal('1 day');
      expect(days.buckets.map((b: Rec) => b.key)).to.deep.equal([0, 1, 2, 3].map((d) => new Date(base + d * DAY).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')));
      const expected = [0, 1, 2, 3].map((d) => all.filter((r) => r.type === 'track' && Math.floor((Date.parse(r.timestamp) - base) / DAY) === d));
      expect(days.buckets.map((b: Rec) => b.doc_count)).to.deep.equal(expected.map((e) => e.length));
      expect(days.buckets.map((b: Rec) => b.unique_users)).to.deep.equal(expected.map((e) => new Set(e.map((r) => r.user_id)).size));
    });

    it('coarsens the interval to fit date_histogram_buckets, and takes the missing bounds from the data', async () => {
      const res = await aggregate({ group_by: [{ field: 'timestamp', date_histogram_min_interval: 'hour', date_histogram_buckets: 10 }] });
      const level = res.body.aggregations;
      expect(level.buckets.length).to.be.within(1, 10);
      expect(level.buckets.reduce((n: number, b: Rec) => n + b.doc_count, 0)).to.equal(all.length);
      expect(level.interval).to.match(/^\d+ hour$/);
    });

    it('rejects bad rules and metrics with a 400', async () => {
      for (const body of [{}, { group_by: [] }, { group_by: [{ field: 'nope' }] }, { group_by: [{ field: 'property' }] }, { group_by: [{ field: 'type' }], metrics: ['sum'] }]) {
        const res = await aggregate(body);
        expect(res.status, JSON.stringify(body)).to.equal(400);
      }
    });

    it('names what a body or a rule is missing, in plain words', async () => {
      const cases: Array<[unknown, Array<{ path: string; message: string }>]> = [
        [{}, [{ path: 'group_by', message: 'group_by is required' }]],
        [{ group_by: [{ field: 'property' }] }, [{ path: 'group_by[0].property_key', message: 'property_key is required' }]],
        [{ group_by: [{ field: 'group' }] }, [{ path: 'group_by[0].group_type', message: 'group_type is required' }]],
        [{ group_by: [{ field: 'timestamp', date_histogram_min_interval: 'day' }] }, [{ path: 'group_by[0].date_histogram_buckets', message: 'date_histogram_buckets is required' }]],
      ];
      for (const [body, issues] of cases) {
        const res = await aggregate(body);
        expect(res.status, JSON.stringify(body)).to.equal(400);
        expect(res.body.error.issues, JSON.stringify(body)).to.deep.equal(issues);
      }
    });
  });

  describe('cursors', () => {
    it('page through every event exactly once while events keep arriving', async () => {
      const org = crypto.randomUUID();
      const w = await svc.token(['events'], org);
      const r = await svc.token(['events:read'], org);
      const now = Date.now();
      // 60 events over the last 2 days, and a request of 10 without timestamps (all the same instant).
      const batch = Array.from({ length: 60 }, (_, i) => ({ type: 'track', event_name: `old${i}`, timestamp: new Date(now - 2 * DAY + (i % 20) * 3_600_000).toISOString() }));
      expect((await svc.request('POST', '/1.0/event', { token: w, body: batch })).status).to.equal(200);
      expect((await svc.request('POST', '/1.0/event', { token: w, body: Array.from({ length: 10 }, (_, i) => ({ type: 'track', event_name: `same${i}` })) })).status).to.equal(200);
      const seen: string[] = [];
      const names: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      let arriving = 0;
      do {
        const res = await search({ size: 7, filters: [{ key: 'type', operator: 'eq', value: 'track' }], ...(cursor ? { cursor } : {}) }, r);
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        seen.push(...res.body.hits.events.map((e: Rec) => e.event_id));
        names.push(...res.body.hits.events.map((e: Rec) => e.event_name));
        cursor = res.body.next_cursor;
        // Events arrive between pages: newer ones, and one request with many at the same instant.
        await svc.request('POST', '/1.0/event', { token: w, body: Array.from({ length: 5 }, () => ({ type: 'track', event_name: 'new' })) });
        arriving += 5;
        pages++;
      } while (cursor && pages < 50);
      expect(new Set(seen).size).to.equal(seen.length);
      expect(seen).to.have.length(70);
      expect(names.filter((n) => n === 'new')).to.have.length(0);
      // The items of one request at the same instant: the later item first.
      expect(names.slice(0, 10)).to.deep.equal(Array.from({ length: 10 }, (_, i) => `same${9 - i}`));
      expect(arriving).to.equal(pages * 5);
    });

    it('rejects a cursor sent with other filters, range, or another organization', async () => {
      const first = await search({ size: 2, filters: [{ key: 'type', operator: 'eq', value: 'track' }] });
      const cursor = first.body.next_cursor;
      expect(cursor).to.be.a('string');
      const cases = [{ cursor }, { cursor, filters: [{ key: 'type', operator: 'eq', value: 'page' }] }, { cursor, filters: [{ key: 'type', operator: 'eq', value: 'track' }], range: { start: at(0) } }];
      for (const body of cases) {
        const res = await search(body);
        expect(res.status).to.equal(400);
        expect(res.body.error.message).to.match(/cursor/);
      }
      const stranger = await svc.token(['events:read'], crypto.randomUUID());
      expect((await search({ cursor, filters: [{ key: 'type', operator: 'eq', value: 'track' }] }, stranger)).status).to.equal(400);
      const next = await search({ cursor, size: 2, filters: [{ key: 'type', operator: 'eq', value: 'track' }] });
      expect(next.status).to.equal(200);
      expect(next.body.hits.events.map((r: Rec) => r.event_id)).to.deep.equal(all.filter((r) => r.type === 'track').slice(2, 4).map((r) => r.event_id));
    });
  });

  describe('tenant isolation', () => {
    it("never shows another organization's events, users or groups", async () => {
      const stranger = await svc.token(['events:read'], crypto.randomUUID());
      const res = await search({ size: 100 }, stranger);
      expect(res.body.hits.total.value).to.equal(0);
      const agg = await aggregate({ group_by: [{ field: 'group', group_type: 'company' }], metrics: ['unique_users'] }, stranger);
      expect(agg.body.hits.total.value).to.equal(0);
      expect(agg.body.aggregations.buckets).to.deep.equal([]);
      expect((await svc.request('GET', '/1.0/user/user-1', { token: stranger })).status).to.equal(404);
      // The fixture's org sees its own copy only, though the other org sent the same events.
      const own = await aggregate({ group_by: [{ field: 'user_property', property_key: 'plan' }] });
      expect(own.body.hits.total.value).to.equal(FIXTURE.length);
      const byGroup = await search({ size: 100, filters: [{ key: 'group_id', operator: 'eq', value: groupIds.Acme }] });
      expect(byGroup.body.hits.events.every((r: Rec) => all.some((a) => a.event_id === r.event_id))).to.equal(true);
    });
  });

  describe('OpenAPI', () => {
    it('documents the event reads with their scope, request examples and response schemas', async () => {
      const doc = (await svc.request('GET', '/openapi.json')).body;
      const search = doc.paths['/1.0/event/search'].post;
      const aggregation = doc.paths['/1.0/event/aggregation'].post;
      const profile = doc.paths['/1.0/user/{user_alias}'].get;
      for (const op of [search, aggregation, profile]) {
        expect(op['x-scope']).to.equal('events:read');
        expect(op.responses['200'].content['application/json'].schema.type).to.equal('object');
        expect(op.responses['200'].content['application/json'].example).to.be.an('object');
      }
      expect(search.description).to.match(/SEARCH \/1.0\/event/);
      expect(search.requestBody.content['application/json'].example.filters).to.be.an('array');
      expect(aggregation.requestBody.content['application/json'].example.group_by).to.be.an('array');
      expect(profile.responses).to.have.property('404');
      // The request schemas list the fields the service accepts (they were empty: {}).
      expect(Object.keys(search.requestBody.content['application/json'].schema.properties)).to.include.members(['filters_bool', 'filters', 'range', 'size', 'cursor']);
      expect(aggregation.requestBody.content['application/json'].schema.required).to.deep.equal(['group_by']);
      // The documented request examples are accepted as they are.
      expect((await search_(search.requestBody.content['application/json'].example)).status).to.equal(200);
      expect((await aggregate(aggregation.requestBody.content['application/json'].example)).status).to.equal(200);
    });
  });

  describe('GET /1.0/user/<user_alias>', () => {
    it('answers first/last seen, event count, current properties and groups', async () => {
      const res = await svc.request('GET', '/1.0/user/user-1', { token: read });
      expect(res.status).to.equal(200);
      const mine = all.filter((r) => r.user_alias === 'user-1');
      expect(res.body).to.deep.include({
        user_id: userIds['user-1'],
        user_alias: 'user-1',
        event_count: mine.length,
        first_seen: mine[mine.length - 1].timestamp,
        last_seen: mine[0].timestamp,
        properties: { plan: 'pro', seats: 10, beta: true, trial_end: '2026-01-15T00:00:00Z' },
      });
      expect(res.body.groups.map((g: Rec) => [g.group_type, g.group_name])).to.deep.equal([['company', 'Acme'], ['company', 'Globex']]);
    });

    it('drops a group after group.unassign, keeps the latest identify value, and decodes the alias', async () => {
      const three = await svc.request('GET', '/1.0/user/user-3', { token: read });
      expect(three.body.groups).to.deep.equal([]);
      await svc.request('POST', '/1.0/event', { token: write, body: [{ type: 'identify', user_alias: 'user 3/é', properties: { plan: 'a' } }, { type: 'identify', user_alias: 'user 3/é', properties: { plan: 'b' } }] });
      const odd = await svc.request('GET', `/1.0/user/${encodeURIComponent('user 3/é')}`, { token: read });
      expect(odd.status).to.equal(200);
      expect(odd.body.properties).to.deep.equal({ plan: 'b' });
      expect(odd.body.event_count).to.equal(2);
    });

    it('is a 404 for an alias never seen', async () => {
      const res = await svc.request('GET', '/1.0/user/nobody-ever', { token: read });
      expect(res.status).to.equal(404);
      expect(res.body.error.message).to.match(/nobody-ever/);
    });
  });
});
