import { expect } from 'chai';
import createClient from 'openapi-fetch';
import openapiTS, { astToString } from 'openapi-typescript';
import * as v from 'valibot';
import { allRoutes } from '../unit/route-table.ts';
import { startTestService, type TestService } from './harness.ts';

const isValibot = (s: unknown): s is v.GenericSchema => typeof s === 'object' && s !== null && (s as { kind?: unknown }).kind === 'schema';

interface Operation {
  path: string;
  method: string;
  op: any;
}

/**
 * A newcomer's path: take /openapi.json from the running service, generate a typed client with
 * openapi-typescript + openapi-fetch, and call every operation with the document's own examples.
 * The operations come from the document, so a route added later is called here too.
 */
describe('a client generated from /openapi.json calls every operation', function () {
  this.timeout(300_000);
  let service: TestService;
  let doc: any;
  let operations: Operation[];

  before(async () => {
    service = await startTestService();
    doc = (await service.request('GET', '/openapi.json')).body;
    operations = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method, op })));
    // Writes first, so the reads that follow find what the examples stored.
    operations.sort((a, b) => rank(a) - rank(b));
  });
  after(async () => {
    await service?.close();
  });

  it('generates types in which every operation is callable (no `never` for a documented method)', async () => {
    const types = astToString(await openapiTS(doc));
    for (const { path, method, op } of operations) {
      expect(types, `${op.operationId} is a generated operation`).to.include(`    ${op.operationId}: {`);
      const pathBlock = types.slice(types.indexOf(`    "${path}": {`));
      expect(pathBlock.slice(0, pathBlock.indexOf('\n    };')), `${method} ${path}`).to.include(`        ${method}: operations["${op.operationId}"];`);
    }
  });

  it('answers every operation with its documented status and a body matching its schema', async () => {
    const client = createClient<any>({ baseUrl: service.url });
    const routes = new Map(allRoutes().map((r) => [r.operationId, r]));
    expect(operations.length).to.equal(new Set([...routes.values()].flatMap((r) => [r.method, ...(r.aliases ?? [])].filter((m) => m !== 'SEARCH').map((m) => `${m} ${r.path}`))).size);
    for (const { path, method, op } of operations) {
      const route = routes.get(op.operationId)!;
      const params = Object.fromEntries((op.parameters ?? []).filter((p: any) => p.in === 'path').map((p: any) => [p.name, p.example]));
      const contentType = Object.keys(op.responses[route.success.status].content)[0];
      const headers: Record<string, string> = op['x-scope'] ? { authorization: `Bearer ${await service.token([op['x-scope']])}` } : {};
      const { data, error, response } = await client.request(method as never, path as never, {
        params: { path: params },
        body: op.requestBody?.content['application/json'].example,
        headers,
        parseAs: contentType === 'application/json' ? 'json' : 'text',
      } as never);
      const where = `${method.toUpperCase()} ${path}`;
      expect(response.status, `${where}: ${JSON.stringify(error)}`).to.equal(route.success.status);
      expect(response.headers.get('content-type'), where).to.include(contentType);
      if (isValibot(route.success.schema)) {
        const parsed = v.safeParse(route.success.schema, data);
        expect(parsed.issues?.map((i) => `${i.path?.map((p) => p.key).join('.')}: ${i.message}`), `${where} answer matches its schema`).to.equal(undefined);
      }
    }
  });

  it('reads what the examples wrote, through the generated client', async () => {
    const client = createClient<any>({ baseUrl: service.url, headers: { authorization: `Bearer ${await service.token(['responses:read'])}` } });
    const { data } = await client.POST('/1.0/survey/{survey_ids}/response', { params: { path: { survey_ids: '*' } }, body: { size: 10 } });
    expect(data.hits.total.value).to.be.greaterThan(0);
  });
});

function rank({ method, op }: Operation): number {
  // Deletions last: they delete what the examples wrote and the reads read.
  if (method === 'delete') return 3;
  if (method === 'get') return 2;
  return /^(search|summarize|aggregate)/.test(op.operationId) ? 1 : 0;
}
