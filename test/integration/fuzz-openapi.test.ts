import { expect } from 'chai';
import fc from 'fast-check';
import { request as httpRequest, Agent } from 'node:http';
import { gzipSync } from 'node:zlib';
import { startTestService, type TestService } from './harness.ts';

/**
 * Fuzzing from the OpenAPI document: requests built from each operation's own request schema,
 * and malformed variants of them (wrong types, extra fields, huge numbers, odd unicode, wrong
 * content types and encodings, invalid UTF-8, odd methods and paths, bad tokens). Whatever
 * arrives, the service answers, and never with a 5xx. Seeded and bounded: the same requests on
 * every run, a few seconds long. The operations come from the document, so new routes are fuzzed
 * too.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 400);
const SEED = Number(process.env.FUZZ_SEED ?? 1613);

interface Operation {
  path: string;
  method: string;
  op: any;
}

interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

type Schema = Record<string, any>;

describe('fuzzing the OpenAPI document: no 5xx', function () {
  this.timeout(180_000);
  let service: TestService;
  let doc: any;
  let operations: Operation[];
  let token: string;
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });

  before(async () => {
    service = await startTestService();
    doc = (await service.request('GET', '/openapi.json')).body;
    operations = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method, op })));
    token = await service.token(['events', 'releases', 'responses:read', 'responses:write']);
  });
  after(async () => {
    agent.destroy();
    await service?.close();
  });

  it(`answers ${RUNS} generated requests without a 5xx`, async () => {
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(requestArb(operations, doc, () => token), async (req) => {
        const status = await send(service.url, req, agent);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        expect(status, `${req.method} ${req.path} ${JSON.stringify(req.headers)} ${req.body?.subarray(0, 300).toString('latin1')}`).to.be.below(500);
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    // The runs reached the handlers, not only the front door.
    expect([...statuses.keys()].some((s) => s < 300), `statuses ${JSON.stringify([...statuses])}`).to.equal(true);
    expect([...statuses.keys()].some((s) => s === 400), `statuses ${JSON.stringify([...statuses])}`).to.equal(true);
  });
});

function send(base: string, req: FuzzRequest, agent: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const url = new URL(base);
    const r = httpRequest(
      { host: url.hostname, port: url.port, method: req.method, path: req.path, headers: { ...req.headers, ...(req.body ? { 'content-length': String(req.body.length) } : {}) }, agent },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    r.on('error', reject);
    r.end(req.body);
  });
}

// --- arbitraries ----------------------------------------------------------------------------------

const oddString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  fc.constantFrom('', ' ', '\u0000', '\uFEFF', '\u202E', '𝔘𝔫𝔦', 'é'.repeat(300), '0', '-1', '1e400', 'NaN', 'null', '*', '../', '%00', "'; DROP TABLE events; --", '9999-12-31T23:59:59Z', '0000-01-01T00:00:00Z', '2024-02-30', '1970-01-01T00:00:00Z'),
);
const hugeNumber = fc.constantFrom(1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, -0, 0.1, 2 ** 63, -(2 ** 63), 1e21, 4294967296);
const anyJson = fc.oneof(fc.jsonValue({ maxDepth: 3 }), hugeNumber, oddString);

function resolve(doc: any, s: Schema): Schema {
  return s?.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s;
}

/** Values shaped like the schema (valid or nearly so), with odd strings and numbers inside. */
function fromSchema(doc: any, raw: Schema, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(doc, raw ?? {});
  if (depth > 4) return fc.constant(null);
  if (s.const !== undefined) return fc.constant(s.const);
  if (s.enum) return fc.constantFrom(...s.enum);
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map((a: Schema) => fromSchema(doc, a, depth + 1)));
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case 'object': {
      const props = Object.entries((s.properties ?? {}) as Record<string, Schema>);
      if (!props.length) return fc.dictionary(fc.string({ maxLength: 8 }), anyJson, { maxKeys: 3 });
      return fc.record(Object.fromEntries(props.map(([k, p]) => [k, fromSchema(doc, p, depth + 1)])), { requiredKeys: s.required ?? [] });
    }
    case 'array':
      return fc.array(fromSchema(doc, s.items ?? {}, depth + 1), { maxLength: Math.min(s.maxItems ?? 3, 3), minLength: Math.min(s.minItems ?? 0, 3) });
    case 'string':
      return s.examples?.length ? fc.oneof(fc.constantFrom(...s.examples), oddString) : oddString;
    case 'integer':
      return fc.oneof(fc.integer({ min: s.minimum ?? -1000, max: s.maximum ?? 1000 }), fc.integer(), hugeNumber);
    case 'number':
      return fc.oneof(fc.double({ noNaN: true }), hugeNumber);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    default:
      return anyJson;
  }
}

/** The example with one change: a field removed, retyped, or added, at the top or one level down. */
function mutated(example: unknown): fc.Arbitrary<unknown> {
  return fc.tuple(fc.nat(), anyJson, fc.constantFrom('retype', 'drop', 'extra', 'nest')).map(([i, value, how]) => {
    const copy = structuredClone(example) as any;
    const target = Array.isArray(copy) ? copy[i % Math.max(copy.length, 1)] : copy;
    if (typeof target !== 'object' || target === null) return value;
    const keys = Object.keys(target);
    const key = keys.length ? keys[i % keys.length] : 'x';
    if (how === 'retype') target[key] = value;
    else if (how === 'drop') delete target[key];
    else if (how === 'extra') target[`extra_${i % 7}`] = value;
    else target[key] = [target[key], target[key]];
    return copy;
  });
}

function fillPath(path: string, values: Record<string, string>): string {
  return path.replace(/\{(\w+)\}/g, (_, name) => encodeURIComponent(values[name] ?? 'x'));
}

function requestArb(operations: Operation[], doc: any, token: () => string): fc.Arbitrary<FuzzRequest> {
  const json = (v: unknown) => Buffer.from(JSON.stringify(v) ?? 'null');
  const perOperation = operations.map(({ path, method, op }) => {
    const example = op.requestBody?.content['application/json'].example;
    const bodySchema = op.requestBody?.content['application/json'].schema;
    const pathParams = (op.parameters ?? []).filter((p: any) => p.in === 'path');
    const queryParams = (op.parameters ?? []).filter((p: any) => p.in === 'query');
    const params = fc.record(Object.fromEntries(pathParams.map((p: any) => [p.name, fc.oneof(fc.constant(String(p.example)), oddString, fc.uuid().map(String))]))) as fc.Arbitrary<Record<string, string>>;
    const query = fc.array(fc.tuple(fc.constantFrom(...queryParams.map((p: any) => p.name), 'unknown'), oddString), { maxLength: 3 }).map((pairs) => (pairs.length ? `?${new URLSearchParams(pairs)}` : ''));
    const body: fc.Arbitrary<{ body?: Buffer; headers: Record<string, string> }> = !op.requestBody
      ? fc.constant({ headers: {} })
      : fc.oneof(
          fromSchema(doc, bodySchema).map((v) => ({ body: json(v), headers: { 'content-type': 'application/json' } })),
          mutated(example).map((v) => ({ body: json(v), headers: { 'content-type': 'application/json' } })),
          anyJson.map((v) => ({ body: json(v), headers: { 'content-type': 'application/json' } })),
          fc.constant({ body: json(example), headers: { 'content-type': 'application/json' } }),
          fc.constant({ body: gzipSync(json(example)), headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } }),
          fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', 'application/xml', '').map((ct) => ({ body: json(example), headers: ct ? { 'content-type': ct } : {} })),
          fc.constantFrom('br', 'deflate', 'gzip', 'gzip, gzip', 'identity', 'x-made-up').map((enc) => ({ body: json(example), headers: { 'content-type': 'application/json', 'content-encoding': enc } })),
          fc.uint8Array({ maxLength: 200 }).map((bytes) => ({ body: Buffer.from(bytes), headers: { 'content-type': 'application/json' } })),
          fc.constant({ body: Buffer.concat([Buffer.from('[{"type":"track","event_name":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}]')]), headers: { 'content-type': 'application/json' } }),
          fc.constant({ body: Buffer.from('{"a":' .repeat(100) + '1' + '}'.repeat(100)), headers: { 'content-type': 'application/json' } }),
        );
    return fc.record({ params, query, body, auth: fc.constantFrom('good', 'good', 'good', 'none', 'bad') }).map(({ params, query, body, auth }) => ({
      method: method.toUpperCase(),
      path: fillPath(path, params) + query,
      headers: { ...body.headers, ...(auth === 'good' ? { authorization: `Bearer ${token()}` } : auth === 'bad' ? { authorization: 'Bearer th_not-a-token' } : {}) },
      body: body.body,
    }));
  });
  const oddMethod = fc.record({
    method: fc.constantFrom('SEARCH', 'PROPFIND', 'PATCH', 'PUT', 'DELETE', 'OPTIONS', 'HEAD', 'TRACE', 'FOO', 'MKCOL', 'LOCK'),
    path: fc.oneof(fc.constantFrom(...operations.map((o) => fillPath(o.path, { survey_ids: '*' }))), fc.constantFrom('/nope', '/', '/1.0/', '/1.0/survey/*/response/nope', '/%', '/1.0/event?x=%zz')),
  }).map(({ method, path }) => ({ method, path, headers: { authorization: `Bearer ${token()}`, 'content-type': 'application/json' }, body: method === 'HEAD' || method === 'TRACE' ? undefined : Buffer.from('{}') }));
  return fc.oneof({ arbitrary: fc.oneof(...perOperation), weight: 6 }, { arbitrary: oddMethod, weight: 1 });
}
