import { expect } from 'chai';
import fc from 'fast-check';
import { toJsonSchema } from '@valibot/to-json-schema';
import { eventBatchSchema, parseEventBatch } from '../../src/events/schema.ts';
import { parseIsoMillis } from '../../src/time/iso.ts';
import { DomainError, type Issue } from '../../src/errors.ts';

/** The issues of the 400 that `body` must produce. */
function issuesOf(body: unknown): Issue[] {
  try {
    parseEventBatch(body);
  } catch (err) {
    expect(err).to.be.instanceOf(DomainError);
    const e = err as DomainError;
    expect(e.kind).to.equal('invalid');
    expect(e.code).to.equal('validation_error');
    expect(e.issues, 'issues').to.be.an('array').that.is.not.empty;
    return e.issues!;
  }
  throw new Error(`expected a 400 for ${JSON.stringify(body).slice(0, 200)}`);
}
const pathsOf = (body: unknown) => issuesOf(body).map((i) => i.path);

const conv = { conversation_id: 'conv-1', copilot_session_id: 'sess-1' };
const copilot = (event_name: string, extra: Record<string, unknown> = {}) => ({ type: 'copilot', event_name, agent_id: 'agent-1', ...extra });

/** A minimal valid item of every type (and every copilot event name). */
const minimal: Record<string, Record<string, unknown>> = {
  identify: { type: 'identify' },
  track: { type: 'track', event_name: 'signup' },
  'group.assign': { type: 'group.assign', group_name: 'acme' },
  'group.unassign': { type: 'group.unassign', group_name: 'acme' },
  page: { type: 'page', url: 'https://example.test/pricing' },
  screen: { type: 'screen', screen_name: 'Home' },
  'copilot user_prompt': copilot('service_copilot_user_prompt', { ...conv, prompt: 'hi' }),
  'copilot response': copilot('service_copilot_response', { ...conv, response: 'hello' }),
  'copilot conversion': copilot('service_copilot_conversion'),
  'copilot satisfaction': copilot('service_copilot_satisfaction', { ...conv, rating: '4', rating_scale: '1-5' }),
};

const common = {
  user_alias: 'user-42',
  properties: { plan: 'pro', seats: 3, nested: { a: [1, null] } },
  timestamp: '2026-11-22T10:00:00.123Z',
  context: { locale: 'fr-FR', timezone: 'Europe/Paris' },
};

describe('events schema', () => {
  describe('valid items', () => {
    for (const [name, item] of Object.entries(minimal)) {
      it(`accepts a minimal ${name}`, () => {
        expect(parseEventBatch([item])).to.deep.equal([item]);
      });
      it(`accepts a ${name} with every common field`, () => {
        const full = { ...item, ...common };
        expect(parseEventBatch([full])).to.deep.equal([full]);
      });
    }

    it('accepts every copilot field on any copilot event name', () => {
      const all = { ...conv, prompt: 'p', response: 'r', rating: '5', rating_scale: '1-5' };
      for (const name of ['service_copilot_user_prompt', 'service_copilot_response', 'service_copilot_conversion', 'service_copilot_satisfaction']) {
        expect(parseEventBatch([copilot(name, all)])).to.deep.equal([copilot(name, all)]);
      }
    });

    it('accepts group_type on group events', () => {
      const item = { type: 'group.assign', group_type: 'company', group_name: 'acme' };
      expect(parseEventBatch([item])).to.deep.equal([item]);
    });

    it('reads null optional fields as absent', () => {
      const item = { type: 'group.unassign', group_name: 'g', group_type: null, user_alias: null, properties: null, timestamp: null, context: { locale: null } };
      expect(parseEventBatch([item])).to.deep.equal([item]);
    });

    it('accepts an empty properties object and an empty context', () => {
      expect(parseEventBatch([{ type: 'identify', properties: {}, context: {} }])).to.deep.equal([{ type: 'identify', properties: {}, context: {} }]);
    });
  });

  describe('extra fields', () => {
    it('strips unknown fields of items and of context', () => {
      const parsed = parseEventBatch([
        { type: 'page', url: '/a', referrer: 'x', event_name: 'not-for-pages', context: { locale: 'en-US', ip: '1.2.3.4' } },
        { ...minimal['copilot conversion'], extra: { deep: true } },
      ]);
      expect(parsed).to.deep.equal([
        { type: 'page', url: '/a', context: { locale: 'en-US' } },
        minimal['copilot conversion'],
      ]);
    });

    it('keeps unknown keys inside properties (they are the payload)', () => {
      expect(parseEventBatch([{ type: 'identify', properties: { anything: 1 } }])[0]).to.deep.equal({ type: 'identify', properties: { anything: 1 } });
    });
  });

  describe('missing required fields', () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['type', { event_name: 'x' }, 'type'],
      ['track event_name', { type: 'track' }, 'event_name'],
      ['group.assign group_name', { type: 'group.assign', group_type: 't' }, 'group_name'],
      ['group.unassign group_name', { type: 'group.unassign' }, 'group_name'],
      ['page url', { type: 'page' }, 'url'],
      ['screen screen_name', { type: 'screen' }, 'screen_name'],
      ['copilot event_name', { type: 'copilot', agent_id: 'a', ...conv }, 'event_name'],
      ['copilot agent_id', { type: 'copilot', event_name: 'service_copilot_conversion' }, 'agent_id'],
    ];
    for (const [name, item, field] of cases) {
      it(`rejects a missing ${name}`, () => {
        const issues = issuesOf([item]);
        expect(issues.map((i) => i.path)).to.deep.equal([`[0].${field}`]);
        expect(issues[0].message).to.contain(`Missing required field "${field}"`);
      });
    }

    it('rejects an empty required string', () => {
      for (const [item, field] of [
        [{ type: 'track', event_name: '' }, 'event_name'],
        [{ type: 'page', url: '' }, 'url'],
        [{ type: 'identify', user_alias: '' }, 'user_alias'],
        [copilot('service_copilot_conversion', { agent_id: '' }), 'agent_id'],
      ] as const) {
        expect(pathsOf([item])).to.deep.equal([`[0].${field}`]);
      }
    });
  });

  describe('copilot conditional rules', () => {
    const cases: Array<[string, Record<string, unknown>, string[]]> = [
      ['user_prompt without conversation_id', copilot('service_copilot_user_prompt', { copilot_session_id: 's', prompt: 'p' }), ['conversation_id']],
      ['user_prompt without copilot_session_id', copilot('service_copilot_user_prompt', { conversation_id: 'c', prompt: 'p' }), ['copilot_session_id']],
      ['user_prompt without prompt', copilot('service_copilot_user_prompt', conv), ['prompt']],
      ['response without response', copilot('service_copilot_response', conv), ['response']],
      ['response without ids', copilot('service_copilot_response', { response: 'r' }), ['conversation_id', 'copilot_session_id']],
      ['satisfaction without rating', copilot('service_copilot_satisfaction', { ...conv, rating_scale: '1-5' }), ['rating']],
      ['satisfaction without rating_scale', copilot('service_copilot_satisfaction', { ...conv, rating: '5' }), ['rating_scale']],
      ['satisfaction with nothing', copilot('service_copilot_satisfaction'), ['conversation_id', 'copilot_session_id', 'rating', 'rating_scale']],
      ['unknown event_name', copilot('service_copilot_other', conv), ['event_name']],
      ['track-style event_name', copilot('signup', conv), ['event_name']],
    ];
    for (const [name, item, fields] of cases) {
      it(`rejects ${name}`, () => {
        expect(pathsOf([item]).sort()).to.deep.equal(fields.map((f) => `[0].${f}`).sort());
      });
    }

    it('does not require conversation_id, copilot_session_id, prompt, response or rating for conversion', () => {
      expect(parseEventBatch([copilot('service_copilot_conversion')])).to.have.length(1);
    });

    it('does not require prompt for response, nor response for user_prompt', () => {
      expect(parseEventBatch([copilot('service_copilot_response', { ...conv, response: 'r' }), copilot('service_copilot_user_prompt', { ...conv, prompt: 'p' })])).to.have.length(2);
    });
  });

  describe('length limits', () => {
    const limits: Array<[string, (value: string) => Record<string, unknown>, number]> = [
      ['agent_id', (s) => copilot('service_copilot_conversion', { agent_id: s }), 100],
      ['conversation_id', (s) => copilot('service_copilot_response', { ...conv, response: 'r', conversation_id: s }), 100],
      ['conversation_id (conversion, optional)', (s) => copilot('service_copilot_conversion', { conversation_id: s }), 100],
      ['copilot_session_id', (s) => copilot('service_copilot_response', { ...conv, response: 'r', copilot_session_id: s }), 100],
      ['prompt', (s) => copilot('service_copilot_user_prompt', { ...conv, prompt: s }), 10_000],
      ['response', (s) => copilot('service_copilot_response', { ...conv, response: s }), 10_000],
      ['rating', (s) => copilot('service_copilot_satisfaction', { ...conv, rating: s, rating_scale: '1-5' }), 100],
      ['rating_scale', (s) => copilot('service_copilot_satisfaction', { ...conv, rating: '1', rating_scale: s }), 100],
      ['user_alias', (s) => ({ type: 'identify', user_alias: s }), 255],
      ['event_name', (s) => ({ type: 'track', event_name: s }), 255],
      ['group_type', (s) => ({ type: 'group.assign', group_name: 'g', group_type: s }), 255],
      ['group_name', (s) => ({ type: 'group.assign', group_name: s }), 255],
      ['url', (s) => ({ type: 'page', url: s }), 8192],
      ['screen_name', (s) => ({ type: 'screen', screen_name: s }), 255],
      ['context.locale', (s) => ({ type: 'identify', context: { locale: s } }), 64],
      ['context.timezone', (s) => ({ type: 'identify', context: { timezone: s } }), 64],
    ];
    // A locale of its form (schema.ts LOCALE_PATTERN) at any length: `en`, then `-x...` subtags of at most 8.
    const localeOf = (n: number) => {
      let s = 'en';
      while (s.length < n) s += `-${'x'.repeat(Math.min(8, n - s.length - 1))}`;
      return s;
    };
    for (const [field, make, max] of limits) {
      const path = `[0].${field.split(' ')[0]}`;
      const fill = field === 'context.locale' ? localeOf : (n: number) => 'x'.repeat(n);
      it(`accepts ${max} characters of ${field} and rejects ${max + 1}`, () => {
        expect(fill(max)).to.have.length(max);
        expect(fill(max + 1)).to.have.length(max + 1);
        expect(parseEventBatch([make(fill(max))])).to.have.length(1);
        const issues = issuesOf([make(fill(max + 1))]);
        expect(issues).to.deep.equal([{ path, message: `Must be at most ${max} characters` }]);
      });
    }
  });

  describe('context.locale and context.timezone: of their form (language-REGION, IANA name)', () => {
    const LOCALE_MESSAGE = 'Must be a locale in language-REGION form (BCP 47), e.g. en, en-US, pt-BR, zh-Hant-TW (en_US is taken too)';
    const TIMEZONE_MESSAGE = 'Must be an IANA time zone name, e.g. UTC, Europe/Paris, America/Argentina/Buenos_Aires, Etc/GMT+5';
    for (const locale of ['en', 'en-US', 'pt-BR', 'zh-Hant-TW', 'en_US', 'es-419', 'de-CH-1996', 'sr-Latn', 'EN-us', '']) {
      it(`accepts the locale ${JSON.stringify(locale)}`, () => {
        expect(parseEventBatch([{ type: 'identify', context: { locale } }])[0].context).to.deep.equal({ locale });
      });
    }
    for (const locale of ['English', 'e', 'en-', 'en US', 'en-US.UTF-8', '12', 'en--US', '-US', 'C', 'en-abcdefghi', ' en']) {
      it(`rejects the locale ${JSON.stringify(locale)} with a 400 naming the field and the form`, () => {
        expect(issuesOf([{ type: 'identify', context: { locale } }])).to.deep.equal([{ path: '[0].context.locale', message: LOCALE_MESSAGE }]);
      });
    }
    for (const timezone of ['UTC', 'Europe/Paris', 'America/Argentina/Buenos_Aires', 'Etc/GMT+5', 'Etc/GMT-14', 'EST5EDT', 'America/Port-au-Prince', 'GMT0', '']) {
      it(`accepts the time zone ${JSON.stringify(timezone)}`, () => {
        expect(parseEventBatch([{ type: 'identify', context: { timezone } }])[0].context).to.deep.equal({ timezone });
      });
    }
    for (const timezone of ['+05:00', 'GMT+5:30', 'Eastern Standard Time', 'Europe//Paris', '/UTC', 'UTC/', '5/Paris', 'Europe/Paris ', '-0300']) {
      it(`rejects the time zone ${JSON.stringify(timezone)} with a 400 naming the field and the form`, () => {
        expect(issuesOf([{ type: 'identify', context: { timezone } }])).to.deep.equal([{ path: '[0].context.timezone', message: TIMEZONE_MESSAGE }]);
      });
    }
  });

  describe('wrong types', () => {
    const cases: Array<[string, unknown, string]> = [
      ['unknown type', { type: 'alias' }, '[0].type'],
      ['non-string type', { type: 7 }, '[0].type'],
      ['number event_name', { type: 'track', event_name: 5 }, '[0].event_name'],
      ['array properties', { type: 'identify', properties: [1, 2] }, '[0].properties'],
      ['string properties', { type: 'identify', properties: 'a=1' }, '[0].properties'],
      ['string context', { type: 'identify', context: 'fr-FR' }, '[0].context'],
      ['number locale', { type: 'identify', context: { locale: 1 } }, '[0].context.locale'],
      ['number user_alias', { type: 'identify', user_alias: 42 }, '[0].user_alias'],
      ['number timestamp', { type: 'identify', timestamp: 1764000000000 }, '[0].timestamp'],
      ['number item', 5, '[0]'],
      ['null item', null, '[0]'],
      // an array is an object to valibot's variant: it is reported as lacking `type`
      ['array item', [{ type: 'identify' }], '[0].type'],
    ];
    for (const [name, item, path] of cases) {
      it(`rejects ${name} at ${path}`, () => {
        expect(pathsOf([item])).to.deep.equal([path]);
      });
    }
  });

  describe('messages', () => {
    const cases: Array<[string, unknown, Issue]> = [
      ['missing type', {}, { path: '[0].type', message: 'Missing required field "type" (one of "identify", "track", "group.assign", "group.unassign", "page", "screen", "copilot")' }],
      ['unknown type', { type: 'alias' }, { path: '[0].type', message: '"type" must be one of "identify", "track", "group.assign", "group.unassign", "page", "screen", "copilot"; received "alias"' }],
      [
        'unknown copilot event_name',
        copilot('service_copilot_x', conv),
        { path: '[0].event_name', message: '"event_name" must be one of "service_copilot_user_prompt", "service_copilot_response", "service_copilot_conversion", "service_copilot_satisfaction"; received "service_copilot_x"' },
      ],
      ['missing field', { type: 'screen' }, { path: '[0].screen_name', message: 'Missing required field "screen_name"' }],
      ['non-object item', 'identify', { path: '[0]', message: 'Each event must be a JSON object' }],
      ['wrong field type', { type: 'page', url: 1 }, { path: '[0].url', message: 'Must be a string' }],
      ['bad timestamp', { type: 'page', url: '/', timestamp: 'now' }, { path: '[0].timestamp', message: 'Must be an ISO 8601 date-time, e.g. 2026-11-22T10:00:00.000Z' }],
    ];
    for (const [name, item, issue] of cases) {
      it(`words ${name} plainly`, () => {
        expect(issuesOf([item])).to.deep.equal([issue]);
      });
    }
  });

  describe('batch size and shape', () => {
    const many = (n: number) => Array.from({ length: n }, () => ({ type: 'identify' }));

    it('accepts 1 and 100 items', () => {
      expect(parseEventBatch(many(1))).to.have.length(1);
      expect(parseEventBatch(many(100))).to.have.length(100);
    });

    for (const [name, body] of [
      ['0 items', []],
      ['101 items', many(101)],
    ] as const) {
      it(`rejects ${name} with a body-level issue`, () => {
        expect(issuesOf(body)).to.deep.equal([{ path: '', message: 'Body must contain 1 to 100 events' }]);
      });
    }

    for (const [name, body] of [
      ['an object', { type: 'identify' }],
      ['a string', '[]'],
      ['a number', 1],
      ['null', null],
      ['undefined', undefined],
    ] as const) {
      it(`rejects ${name} as the body`, () => {
        expect(issuesOf(body)).to.deep.equal([{ path: '', message: 'Body must be a JSON array of 1 to 100 events' }]);
      });
    }
  });

  describe('all-or-nothing with every bad item named', () => {
    it('names every bad item by index and field, and nothing of the good ones', () => {
      const body = [
        { type: 'identify' },
        { type: 'track' },
        minimal.page,
        copilot('nope', conv),
        { type: 'page', url: 'x'.repeat(9000), timestamp: 'yesterday' },
        copilot('service_copilot_user_prompt', { agent_id: 'x'.repeat(101) }),
        minimal.screen,
      ];
      expect(pathsOf(body).sort()).to.deep.equal(
        [
          '[1].event_name',
          '[3].event_name',
          '[4].url',
          '[4].timestamp',
          '[5].agent_id',
          '[5].conversation_id',
          '[5].copilot_session_id',
          '[5].prompt',
        ].sort(),
      );
    });

    it('reports only the size of a batch that is too long, without validating its items', () => {
      const body = [...Array.from({ length: 100 }, () => ({ type: 'identify' })), { type: 'track' }];
      expect(pathsOf(body)).to.deep.equal(['']);
    });

    it('names array properties beside the other issues', () => {
      const body = [{ type: 'track' }, { type: 'identify', properties: [] }, { type: 'identify', properties: { ok: [] } }];
      expect(issuesOf(body)).to.have.deep.members([
        { path: '[0].event_name', message: 'Missing required field "event_name"' },
        { path: '[1].properties', message: 'Must be a JSON object' },
      ]);
    });
  });

  describe('timestamp', () => {
    const valid: Array<[string, string]> = [
      ['2026-11-22T10:00:00Z', '2026-11-22T10:00:00.000Z'],
      ['2026-11-22T10:00:00.123Z', '2026-11-22T10:00:00.123Z'],
      ['2026-11-22T10:00:00.123456789Z', '2026-11-22T10:00:00.123Z'],
      ['2026-11-22T10:00:00,5Z', '2026-11-22T10:00:00.500Z'],
      ['2026-11-22T10:00:00+02:00', '2026-11-22T08:00:00.000Z'],
      ['2026-11-22T10:00:00-0130', '2026-11-22T11:30:00.000Z'],
      ['2026-11-22T10:00:00+05', '2026-11-22T05:00:00.000Z'],
      ['2026-11-22 10:00:00Z', '2026-11-22T10:00:00.000Z'],
      ['2026-11-22t10:00z', '2026-11-22T10:00:00.000Z'],
      ['2026-11-22T10:00:00', '2026-11-22T10:00:00.000Z'],
      ['2026-11-22', '2026-11-22T00:00:00.000Z'],
      ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00.000Z'],
      ['2000-02-29', '2000-02-29T00:00:00.000Z'],
      ['0099-01-01', '0099-01-01T00:00:00.000Z'],
    ];
    for (const [input, expected] of valid) {
      it(`accepts ${input}`, () => {
        expect(parseEventBatch([{ type: 'identify', timestamp: input }])[0].timestamp).to.equal(input);
        expect(new Date(parseIsoMillis(input)!).toISOString()).to.equal(expected);
      });
    }

    it('accepts and reads back what Date#toISOString writes (property)', () => {
      fc.assert(
        fc.property(fc.date({ min: new Date('0000-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true }), (date) => {
          const text = date.toISOString();
          expect(parseEventBatch([{ type: 'identify', timestamp: text }])).to.have.length(1);
          expect(parseIsoMillis(text)).to.equal(date.getTime());
        }),
      );
    });

    const invalid = [
      '',
      'yesterday',
      'Sun, 22 Nov 2026 10:00:00 GMT',
      '1764000000',
      '2026-11-22T10:00:00ZZ',
      '2026-13-01',
      '2026-02-30',
      '2023-02-29',
      '1900-02-29',
      '2026-04-31T00:00:00Z',
      '2026-11-22T24:00:00Z',
      '2026-11-22T10:60:00Z',
      '2026-11-22T10:00:61Z',
      '2026-11-22T10Z',
      '2026-11-22T10:00:00+25:00',
      '2026-11-22T10:00:00.Z',
      '2026-11-22T10:00:00.1234567890Z',
      '20261122T100000Z',
      ' 2026-11-22',
      '2026-11-22\n',
    ];
    for (const input of invalid) {
      it(`rejects ${JSON.stringify(input)} with a 400 at [0].timestamp`, () => {
        expect(pathsOf([{ type: 'identify', timestamp: input }])).to.deep.equal(['[0].timestamp']);
        expect(parseIsoMillis(input)).to.equal(undefined);
      });
    }
  });

  describe('JSON Schema', () => {
    it('converts to JSON Schema with the default options', () => {
      const json = toJsonSchema(eventBatchSchema) as Record<string, any>;
      expect(json.type).to.equal('array');
      expect(json.minItems).to.equal(1);
      expect(json.maxItems).to.equal(100);
      expect(json.items.oneOf).to.have.length(7);
      const copilotJson = json.items.oneOf[6];
      expect(copilotJson.oneOf).to.have.length(4);
      expect(copilotJson.oneOf[0].required).to.include.members(['type', 'event_name', 'agent_id', 'conversation_id', 'copilot_session_id', 'prompt']);
      expect(copilotJson.oneOf[2].required).to.not.include('conversation_id');
      expect(json.items.oneOf[0].properties.properties.anyOf[0].type).to.equal('object');
      expect(toJsonSchema(eventBatchSchema, { target: 'openapi-3.0' })).to.be.an('object');
    });
  });
});
