import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as v from 'valibot';
import { openApiDocument } from '../../src/server/openapi.ts';
import { allRoutes } from './route-table.ts';

const run = promisify(execFile);
const REDOCLY = fileURLToPath(new URL('../../node_modules/.bin/redocly', import.meta.url));
const isValibot = (s: unknown): s is v.GenericSchema => typeof s === 'object' && s !== null && (s as { kind?: unknown }).kind === 'schema';
const AUTH = { orgId: '5f0c6d1e-2a3b-4c5d-8e9f-0a1b2c3d4e5f', tokenId: 'x', scopes: [] } as never;

/**
 * What every route must carry so that the document is complete and the generated-client, docs and
 * fuzz tests cover it without being edited: a new route without these fails here, by name.
 */
describe('route table: every route is documented completely', () => {
  const routes = allRoutes();

  for (const route of routes) {
    const name = `${route.method} ${route.path} (${route.operationId || 'no operationId'})`;
    it(`${name}: operationId, summary, success schema and example`, () => {
      expect(route.operationId, 'operationId').to.match(/^[a-z][A-Za-z0-9]+$/);
      expect(route.summary, 'summary').to.be.a('string').and.not.equal('');
      expect(route.success.schema, 'success.schema').to.exist;
      expect(route.success.example, 'success.example').to.not.equal(undefined);
      if (isValibot(route.success.schema)) {
        const parsed = v.safeParse(route.success.schema, route.success.example);
        expect(parsed.issues?.map((i) => `${i.path?.map((p) => p.key).join('.')}: ${i.message}`), 'success.example matches success.schema').to.equal(undefined);
      }
    });
    if (route.body) {
      it(`${name}: a body example the route accepts`, () => {
        expect(route.body!.example, 'body.example').to.not.equal(undefined);
        // Throws the route's own 400 (with its issues) if the example is not a valid body.
        if (route.body!.parse) route.body!.parse(structuredClone(route.body!.example), AUTH);
        else v.parse(route.body!.schema, structuredClone(route.body!.example));
      });
    }
    for (const [param, spec] of Object.entries(route.params ?? {})) {
      it(`${name}: path parameter ${param} has an example`, () => expect(spec.example).to.be.a('string'));
    }
  }

  it('operationIds are unique', () => {
    const ids = routes.map((r) => r.operationId);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).to.deep.equal([]);
  });
});

describe('OpenAPI document', function () {
  this.timeout(300_000);
  const doc = openApiDocument(allRoutes());
  const operations = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method, op })));

  it('describes every operation with request and response schemas and examples', () => {
    expect(operations.length).to.be.greaterThan(5);
    for (const { path, method, op } of operations) {
      const where = `${method.toUpperCase()} ${path}`;
      expect(op.operationId, where).to.be.a('string');
      expect(op.responses['431'], `${where} documents 431`).to.exist;
      for (const [status, response] of Object.entries(op.responses as Record<string, any>)) {
        // 304 Not Modified has no body by definition (RFC 9110).
        if (status === '304') {
          expect(response.content, `${where} 304 has no body`).to.equal(undefined);
          continue;
        }
        const r = response.$ref ? doc.components.responses[response.$ref.split('/').pop()] : response;
        const media = Object.values(r.content ?? {})[0] as any;
        expect(media?.schema, `${where} ${status} has a schema`).to.exist;
        expect(media?.example, `${where} ${status} has an example`).to.not.equal(undefined);
      }
      if (op.requestBody) expect(op.requestBody.content['application/json'].example, `${where} request example`).to.not.equal(undefined);
    }
  });

  it('describes the fields of every JSON-object request body (not an empty schema), with the example inside them', () => {
    // A strict body (validation.ts jsonObject) is a guard then an object schema: the document must
    // show the object, its required fields and that unknown fields are refused, as the service does.
    const bodies = operations.filter(({ op }) => op.requestBody);
    expect(bodies.length).to.be.greaterThan(5);
    for (const { path, method, op } of bodies) {
      const where = `${method.toUpperCase()} ${path}`;
      const media = op.requestBody.content['application/json'];
      expect(media.schema, `${where} request schema`).to.not.deep.equal({});
      if (media.schema.type !== 'object') continue;
      expect(media.schema.additionalProperties, `${where} refuses unknown fields`).to.equal(false);
      const known = Object.keys(media.schema.properties ?? {});
      expect(Object.keys(media.example).filter((k) => !known.includes(k)), `${where} example fields`).to.deep.equal([]);
    }
    const schemaOf = (path: string) => (doc.paths as any)[path].post.requestBody.content['application/json'].schema;
    expect(schemaOf('/1.0/survey/{survey_ids}/response/aggregation').required).to.deep.equal(['group_by']);
    expect(Object.keys(schemaOf('/1.0/survey/{survey_ids}/response').properties)).to.include.members(['filters_bool', 'filters', 'range', 'size', 'offset', 'cursor']);
    expect(schemaOf('/1.0/release').required).to.deep.equal(['name', 'version']);
    // Survey filter items and group_by rules are strict objects too (unknown fields are a 400).
    expect(schemaOf('/1.0/survey/{survey_ids}/response').properties.filters.items).to.deep.include({ additionalProperties: false, required: ['key', 'operator'] });
    const rules = schemaOf('/1.0/survey/{survey_ids}/response/aggregation').properties.group_by.items.oneOf;
    expect(rules).to.have.length(6);
    for (const rule of rules) expect(rule.additionalProperties, JSON.stringify(rule)).to.equal(false);
    expect(rules.find((r: any) => r.properties.field.const === 'hidden_field').required).to.deep.equal(['field', 'hidden_field_key']);
  });

  it('marks a request body optional only when a missing body is answered (its stand-in is a valid body)', () => {
    const bodyOf = (path: string) => (doc.paths as any)[path].post.requestBody;
    // name and version are required: a missing body is a 400 (it was shown as optional).
    expect(bodyOf('/1.0/release').required).to.equal(true);
    expect(bodyOf('/1.0/survey/{survey_ids}/response/aggregation').required).to.equal(true);
    expect(bodyOf('/1.0/event/aggregation').required).to.equal(true);
    for (const path of ['/1.0/survey/{survey_ids}/response', '/1.0/survey/{survey_ids}/response/summary', '/1.0/event/search', '/1.0/release/{release_id}/impact']) {
      expect(bodyOf(path).required, path).to.equal(false);
    }
  });

  it('has a security scheme, servers, and no SEARCH-only operation hidden from generators', () => {
    expect(doc.components.securitySchemes.bearer).to.include({ type: 'http', scheme: 'bearer' });
    expect(doc.servers).to.have.length.greaterThan(0);
    expect(JSON.stringify(doc)).to.not.include('x-search');
    expect(JSON.stringify(doc)).to.not.include('#/$defs/');
  });

  it('passes Redocly lint with 0 errors', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tallyhouse-openapi-'));
    try {
      const file = join(dir, 'openapi.json');
      writeFileSync(file, JSON.stringify(doc));
      const result = await run(REDOCLY, ['lint', file, '--format=json'], { env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }, maxBuffer: 64 << 20 }).catch(
        (e: { stdout: string; stderr: string }) => e,
      );
      const report = JSON.parse(result.stdout) as { totals: { errors: number }; problems: { severity: string; message: string; location: { pointer: string }[] }[] };
      const errors = report.problems.filter((p) => p.severity === 'error').map((p) => `${p.message} at ${p.location[0]?.pointer}`);
      expect(errors).to.deep.equal([]);
      expect(report.totals.errors).to.equal(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
