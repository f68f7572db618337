import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import fc from 'fast-check';
import {
  MAX_EVENT_AGE_MS,
  NIL_UUID,
  TALLYHOUSE_ID_NAMESPACE,
  effectiveTimestamp,
  groupIdFor,
  toEventRows,
  userIdForAlias,
  uuidV5,
  type EventRow,
} from '../../src/events/rows.ts';
import { parseEventBatch } from '../../src/events/schema.ts';
import { formatDbDate } from '../../src/time/iso.ts';

const ORG = '7f9c0a52-3d1e-4b6a-9c2f-0e8d1a2b3c4d';
const OTHER_ORG = '0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9';
const RECEIVED = new Date('2026-11-22T10:00:00.250Z');
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const UUID_V5 = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const rowsOf = (body: unknown[], orgId = ORG, receivedAt = RECEIVED) => toEventRows(orgId, parseEventBatch(body), receivedAt);
const rowOf = (item: unknown, orgId = ORG, receivedAt = RECEIVED) => rowsOf([item], orgId, receivedAt)[0];

describe('event rows', () => {
  describe('uuidV5', () => {
    // expected values computed with Python's uuid.uuid5
    const vectors: Array<[string, string, string]> = [
      ['6ba7b810-9dad-11d1-80b4-00c04fd430c8', 'www.example.com', '2ed6657d-e927-568b-95e1-2665a8aea6a2'],
      ['6ba7b810-9dad-11d1-80b4-00c04fd430c8', 'python.org', '886313e1-3b8a-5372-9b90-0c9aee199e5d'],
      ['6ba7b811-9dad-11d1-80b4-00c04fd430c8', 'https://www.python.org/', '5406f80d-92e9-51cd-a176-77445955e733'],
      ['06a9ccfd-2b53-501d-a918-954ecc6dfc47', 'ünïcode', '8d8bd366-fc80-5469-a02d-6f6ae3467a07'],
    ];
    for (const [namespace, name, expected] of vectors) {
      it(`uuid5(${namespace}, ${name})`, () => {
        expect(uuidV5(namespace, name)).to.equal(expected);
      });
    }

    it('derives the tallyhouse namespace as documented', () => {
      expect(uuidV5('6ba7b811-9dad-11d1-80b4-00c04fd430c8', 'https://tallyhouse.dev/ns/ids')).to.equal(TALLYHOUSE_ID_NAMESPACE);
    });

    it('rejects a malformed namespace', () => {
      expect(() => uuidV5('not-a-uuid', 'x')).to.throw(/Invalid UUID/);
    });

    // Computed by the hand-written SHA-1 implementation this replaced (uuid's v5 since): the stored
    // user and group ids must not change, or every user and group would split in two.
    it('keeps the ids byte-identical to the hand-written implementation it replaced', () => {
      const org = '0d5c3a4e-8f1b-4c2d-9e3f-1a2b3c4d5e6f';
      expect([
        userIdForAlias(org, 'alice'),
        userIdForAlias(org, 'ünïcode 😀'),
        userIdForAlias(org.toUpperCase(), 'Bob'),
        groupIdFor(org, 'company', 'acme'),
        groupIdFor(org, null, 'acme'),
        groupIdFor(org, 'ty"pe', 'na,me'),
      ]).to.deep.equal([
        '068376c5-e504-5cc9-8e9b-bce3230e752b',
        '036b0bb2-76d3-52ae-b120-c111d4be3df9',
        '5e021898-05a3-52ba-a249-adbc83a636f5',
        'e7aaa3d1-8a94-52d1-bd5f-da65ff0faa7b',
        '815814cc-b87f-57e1-9b11-12b915ea0331',
        'fa7fc9df-7109-5610-b5ba-c3b6aadc7d93',
      ]);
    });
  });

  describe('user ids', () => {
    it('maps an alias to the same v5 id for the same org, every time', () => {
      const a = rowOf({ type: 'identify', user_alias: 'alice' });
      const b = rowOf({ type: 'track', event_name: 'x', user_alias: 'alice' }, ORG, new Date('2026-12-01T00:00:00Z'));
      expect(a.user_id).to.match(UUID_V5);
      expect(a.user_id).to.equal(b.user_id);
      expect(a.user_id).to.equal(userIdForAlias(ORG, 'alice'));
      expect(a).to.include({ user_alias: 'alice', anonymous: 0 });
    });

    it('is a deterministic v5 id for any alias (property)', () => {
      fc.assert(
        fc.property(fc.string({ minLength: 1, maxLength: 255, unit: 'binary' }), (alias) => {
          const id = userIdForAlias(ORG, alias);
          expect(id).to.match(UUID_V5);
          expect(userIdForAlias(ORG, alias)).to.equal(id);
          expect(userIdForAlias(OTHER_ORG, alias)).to.not.equal(id);
        }),
      );
    });

    it('is uuid v5 of the documented name for any well-formed alias and group (property)', () => {
      fc.assert(
        fc.property(fc.string({ minLength: 1, maxLength: 255, unit: 'binary' }), fc.string({ maxLength: 40, unit: 'binary' }), (alias, type) => {
          fc.pre([alias, type].every((s) => (s as string & { isWellFormed(): boolean }).isWellFormed()));
          expect(userIdForAlias(ORG, alias)).to.equal(uuidV5(TALLYHOUSE_ID_NAMESPACE, JSON.stringify(['user', ORG.toLowerCase(), alias])));
          expect(groupIdFor(ORG, type, alias)).to.equal(uuidV5(TALLYHOUSE_ID_NAMESPACE, JSON.stringify(['group', ORG.toLowerCase(), type, alias])));
        }),
      );
    });

    it('is uuid v5 of the documented name for new organizations and aliases of every length (the encoded prefix, property)', () => {
      // Each case a new organization (no cached id, no cached prefix); names longer than the
      // 8 KiB name buffer (3 bytes a UTF-16 unit counted) take uuid's v5 instead.
      fc.assert(
        fc.property(
          fc.uuid(),
          fc.boolean(),
          fc.oneof(fc.string({ minLength: 1, maxLength: 200, unit: 'binary' }), fc.string({ minLength: 1, maxLength: 7000, unit: 'grapheme' }), fc.stringMatching(/^[a-z0-9-]{1,120}$/)),
          (org, upper, alias) => {
            const orgId = upper ? org.toUpperCase() : org;
            expect(userIdForAlias(orgId, alias)).to.equal(uuidV5(TALLYHOUSE_ID_NAMESPACE, JSON.stringify(['user', org.toLowerCase(), alias])));
          },
        ),
        { numRuns: 300 },
      );
      for (const alias of ['x'.repeat(55), 'x'.repeat(56), 'x'.repeat(64), 'x'.repeat(2700), 'x'.repeat(2720), 'é'.repeat(2700), 'x'.repeat(5000), 'é'.repeat(3000), 'é'.repeat(6000), 'a"b\\c', '\u0001']) {
        const org = randomUUID();
        expect(userIdForAlias(org, alias)).to.equal(uuidV5(TALLYHOUSE_ID_NAMESPACE, JSON.stringify(['user', org, alias])));
      }
    });

    it('pins the id of an alias (changing the derivation would split every user)', () => {
      expect(userIdForAlias(ORG, 'alice')).to.equal(uuidV5(TALLYHOUSE_ID_NAMESPACE, `["user","${ORG}","alice"]`));
    });

    it('gives another org or another alias a different id, whatever the letter case of the org id', () => {
      const alice = userIdForAlias(ORG, 'alice');
      expect(userIdForAlias(OTHER_ORG, 'alice')).to.not.equal(alice);
      expect(userIdForAlias(ORG, 'Alice')).to.not.equal(alice);
      expect(userIdForAlias(ORG, 'alice ')).to.not.equal(alice);
      expect(userIdForAlias(ORG.toUpperCase(), 'alice')).to.equal(alice);
    });

    it('gives each item without alias its own random anonymous user', () => {
      const rows = rowsOf([{ type: 'identify' }, { type: 'identify' }, { type: 'page', url: '/' }, { type: 'identify', user_alias: null }]);
      const ids = rows.map((r) => r.user_id);
      expect(new Set(ids).size).to.equal(4);
      for (const row of rows) {
        expect(row.user_id).to.match(UUID_V4);
        expect(row).to.include({ user_alias: '', anonymous: 1 });
      }
    });
  });

  describe('event ids', () => {
    it('are random v4 UUIDs, distinct for identical items', () => {
      const rows = rowsOf([{ type: 'identify', user_alias: 'a' }, { type: 'identify', user_alias: 'a' }]);
      expect(rows[0].event_id).to.match(UUID_V4);
      expect(rows[0].event_id).to.not.equal(rows[1].event_id);
    });
  });

  describe('timestamps', () => {
    const at = (deltaMs: number) => new Date(RECEIVED.getTime() + deltaMs).toISOString();
    const DAY = 24 * 60 * 60 * 1000;
    const cases: Array<[string, string | null | undefined, string]> = [
      ['absent', undefined, '2026-11-22 10:00:00.250'],
      ['null', null, '2026-11-22 10:00:00.250'],
      ['one minute old: kept', at(-60_000), '2026-11-22 09:59:00.250'],
      ['equal to reception: kept', at(0), '2026-11-22 10:00:00.250'],
      ['exactly 7 days old: kept', at(-MAX_EVENT_AGE_MS), '2026-11-15 10:00:00.250'],
      ['7 days and 1 ms old: replaced', at(-MAX_EVENT_AGE_MS - 1), '2026-11-22 10:00:00.250'],
      ['8 days old: replaced', at(-8 * DAY), '2026-11-22 10:00:00.250'],
      ['1 ms in the future: replaced', at(1), '2026-11-22 10:00:00.250'],
      ['a day in the future: replaced', at(DAY), '2026-11-22 10:00:00.250'],
      ['with an offset: converted to UTC', '2026-11-22T11:30:00+02:00', '2026-11-22 09:30:00.000'],
      ['microseconds: truncated to ms', '2026-11-22T09:00:00.123999Z', '2026-11-22 09:00:00.123'],
      ['no zone: read as UTC', '2026-11-22T09:00:00', '2026-11-22 09:00:00.000'],
      ['date only: midnight UTC', '2026-11-20', '2026-11-20 00:00:00.000'],
      ['year 0026: replaced, not read as 1926 or 2026', '0026-11-22T09:00:00Z', '2026-11-22 10:00:00.250'],
    ];
    for (const [name, timestamp, expected] of cases) {
      it(`${name}`, () => {
        const row = rowOf({ type: 'identify', timestamp });
        expect(row.timestamp).to.equal(expected);
        expect(row.received_at).to.equal('2026-11-22 10:00:00.250');
      });
    }

    it('always stores a time within the 7 days up to reception (property)', () => {
      fc.assert(
        fc.property(fc.date({ min: new Date('1990-01-01T00:00:00Z'), max: new Date('2060-01-01T00:00:00Z'), noInvalidDate: true }), (date) => {
          const stored = effectiveTimestamp(date.toISOString(), RECEIVED).getTime();
          expect(stored).to.be.within(RECEIVED.getTime() - MAX_EVENT_AGE_MS, RECEIVED.getTime());
          const inWindow = date.getTime() <= RECEIVED.getTime() && RECEIVED.getTime() - date.getTime() <= MAX_EVENT_AGE_MS;
          expect(stored).to.equal(inWindow ? date.getTime() : RECEIVED.getTime());
        }),
      );
    });

    it('treats an unparsable timestamp (never reaching rows through the schema) as absent', () => {
      expect(effectiveTimestamp('garbage', RECEIVED)).to.equal(RECEIVED);
    });

    it('formats DateTime64(3) text in UTC', () => {
      expect(formatDbDate(new Date('2026-01-02T03:04:05.006Z'))).to.equal('2026-01-02 03:04:05.006');
    });
  });

  describe('group ids', () => {
    it('are stable v5 ids of org, group_type and group_name', () => {
      const a = rowOf({ type: 'group.assign', group_type: 'company', group_name: 'acme', user_alias: 'u1' });
      const b = rowOf({ type: 'group.unassign', group_type: 'company', group_name: 'acme', user_alias: 'u2' });
      expect(a.group_id).to.match(UUID_V5);
      expect(a.group_id).to.equal(b.group_id);
      expect(a.group_id).to.equal(groupIdFor(ORG, 'company', 'acme'));
    });

    it('differ by org, type and name, and never collide on how the tuple is split', () => {
      const id = groupIdFor(ORG, 'company', 'acme');
      expect(groupIdFor(OTHER_ORG, 'company', 'acme')).to.not.equal(id);
      expect(groupIdFor(ORG, 'team', 'acme')).to.not.equal(id);
      expect(groupIdFor(ORG, 'company', 'acme2')).to.not.equal(id);
      expect(groupIdFor(ORG, 'a b', 'c')).to.not.equal(groupIdFor(ORG, 'a', 'b c'));
      expect(groupIdFor(ORG, 'a","b', 'c')).to.not.equal(groupIdFor(ORG, 'a', 'b","c'));
    });

    it('treat a missing group_type as the empty one', () => {
      expect(rowOf({ type: 'group.assign', group_name: 'acme' }).group_id).to.equal(groupIdFor(ORG, '', 'acme'));
      expect(groupIdFor(ORG, null, 'acme')).to.equal(groupIdFor(ORG, '', 'acme'));
    });

    it('are never equal to the user id of the same text', () => {
      expect(groupIdFor(ORG, '', 'x')).to.not.equal(userIdForAlias(ORG, 'x'));
    });
  });

  describe('row per type', () => {
    const blank: Omit<EventRow, 'event_id' | 'user_id' | 'type' | 'seq'> = {
      org_id: ORG,
      event_name: '',
      user_alias: 'u',
      anonymous: 0,
      timestamp: '2026-11-22 10:00:00.250',
      received_at: '2026-11-22 10:00:00.250',
      properties: '{}',
      context_locale: '',
      context_timezone: '',
      group_id: NIL_UUID,
      group_type: '',
      group_name: '',
      url: '',
      screen_name: '',
      agent_id: '',
      conversation_id: '',
      copilot_session_id: '',
      prompt: '',
      response: '',
      rating: '',
      rating_scale: '',
      message_id: '',
    };
    const cases: Array<[string, Record<string, unknown>, Partial<EventRow>]> = [
      ['identify', { type: 'identify', properties: { plan: 'pro', n: 2 } }, { properties: '{"plan":"pro","n":2}' }],
      ['track', { type: 'track', event_name: 'signup', context: { locale: 'fr-FR', timezone: 'Europe/Paris' } }, { event_name: 'signup', context_locale: 'fr-FR', context_timezone: 'Europe/Paris' }],
      ['group.assign', { type: 'group.assign', group_type: 'company', group_name: 'acme' }, { group_id: groupIdFor(ORG, 'company', 'acme'), group_type: 'company', group_name: 'acme' }],
      ['group.unassign', { type: 'group.unassign', group_name: 'acme' }, { group_id: groupIdFor(ORG, '', 'acme'), group_name: 'acme' }],
      ['page', { type: 'page', url: 'https://example.test/a?b=1' }, { url: 'https://example.test/a?b=1' }],
      ['screen', { type: 'screen', screen_name: 'Home' }, { screen_name: 'Home' }],
      [
        'copilot user_prompt',
        { type: 'copilot', event_name: 'service_copilot_user_prompt', agent_id: 'ag', conversation_id: 'c', copilot_session_id: 's', prompt: 'hi' },
        { event_name: 'service_copilot_user_prompt', agent_id: 'ag', conversation_id: 'c', copilot_session_id: 's', prompt: 'hi' },
      ],
      [
        'copilot response',
        { type: 'copilot', event_name: 'service_copilot_response', agent_id: 'ag', conversation_id: 'c', copilot_session_id: 's', response: 'hello' },
        { event_name: 'service_copilot_response', agent_id: 'ag', conversation_id: 'c', copilot_session_id: 's', response: 'hello' },
      ],
      ['copilot conversion', { type: 'copilot', event_name: 'service_copilot_conversion', agent_id: 'ag' }, { event_name: 'service_copilot_conversion', agent_id: 'ag' }],
      [
        'copilot satisfaction',
        { type: 'copilot', event_name: 'service_copilot_satisfaction', agent_id: 'ag', conversation_id: 'c', copilot_session_id: 's', rating: '4', rating_scale: '1-5' },
        { event_name: 'service_copilot_satisfaction', agent_id: 'ag', conversation_id: 'c', copilot_session_id: 's', rating: '4', rating_scale: '1-5' },
      ],
    ];
    for (const [name, item, expected] of cases) {
      it(`maps ${name}`, () => {
        const { event_id, user_id, seq, type, ...rest } = rowOf({ ...item, user_alias: 'u', ignored_extra: 'x' });
        expect(type).to.equal(item.type);
        expect(seq).to.equal(0);
        expect(event_id).to.match(UUID_V4);
        expect(user_id).to.equal(userIdForAlias(ORG, 'u'));
        expect(rest).to.deep.equal({ ...blank, ...expected });
      });
    }

    it('numbers items by their position in the request', () => {
      expect(rowsOf([{ type: 'identify' }, { type: 'identify' }, { type: 'identify' }]).map((r) => r.seq)).to.deep.equal([0, 1, 2]);
    });

    it('stores nested properties as compact JSON text', () => {
      expect(rowOf({ type: 'track', event_name: 'e', properties: { a: { b: [1, 'x', null, true] }, 'k"ey': 'v' } }).properties).to.equal(
        '{"a":{"b":[1,"x",null,true]},"k\\"ey":"v"}',
      );
    });

    it('returns no rows for no events', () => {
      expect(toEventRows(ORG, [], RECEIVED)).to.deep.equal([]);
    });
  });
});
