import { expect } from 'chai';
import type { ParsedUrlQuery } from 'node:querystring';
import * as v from 'valibot';
import { idempotent } from '../../src/idempotency/route.ts';
import { IdempotencyStore } from '../../src/idempotency/store.ts';
import { defineRoute, type Feature, type RouteInput } from '../../src/server/route.ts';

/**
 * A route's handler is typed from the schemas beside it: these type assertions fail `npm run
 * typecheck` (the first step of `npm test`) when a handler's body or query falls back to `any`,
 * or to a type written by hand instead of the schema's output.
 */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): T | undefined {
  return undefined;
}

const bodySchema = v.object({ name: v.string(), count: v.pipe(v.string(), v.transform(Number)) });
const querySchema = v.object({ limit: v.optional(v.string(), '10') });
type BodyOut = { name: string; count: number };

const base = {
  operationId: 'probeRoute',
  method: 'POST',
  path: '/probe',
  summary: 'probe',
  tag: 'probe',
  scope: null,
  errors: [400],
  success: { status: 201, description: 'probe' },
} as const;

const input = <B, Q>(body: B, query: Q): RouteInput<B, Q> => ({
  auth: { orgId: '5f0c6d1e-2a3b-4c5d-8e9f-0a1b2c3d4e5f', tokenId: 't', scopes: [] } as never,
  body,
  query,
  params: {},
  headers: {},
  signal: new AbortController().signal,
});

describe('route definitions: the handler is typed from its schemas', () => {
  it('body and query are the schemas\' outputs', async () => {
    const route = defineRoute({
      ...base,
      body: { schema: bodySchema, limitBytes: 1024 },
      query: querySchema,
      handler: ({ body, query }) => {
        assertType<Equal<typeof body, BodyOut>>();
        assertType<Equal<typeof query, { limit: string }>>();
        return `${body.name}:${body.count + 1}:${query.limit}`;
      },
    });
    expect(await route.handler(input<BodyOut, { limit: string }>({ name: 'a', count: 1 }, { limit: '5' }))).to.equal('a:2:5');
  });

  it('a custom parse types the body with what it returns', async () => {
    const route = defineRoute({
      ...base,
      body: { schema: bodySchema, limitBytes: 1024, parse: (raw) => ({ chunk: JSON.stringify(raw), at: 7 }) },
      handler: ({ body, query }) => {
        assertType<Equal<typeof body, { chunk: string; at: number }>>();
        assertType<Equal<typeof query, ParsedUrlQuery>>();
        return body.at;
      },
    });
    const parsed = route.body!.parse!({ x: 1 }, input(undefined, {}).auth);
    expect(parsed).to.deep.equal({ chunk: '{"x":1}', at: 7 });
    expect(await route.handler(input(parsed, {}))).to.equal(7);
  });

  it('no body schema: the body is undefined', async () => {
    const route = defineRoute({ ...base, method: 'GET', handler: ({ body }) => {
      assertType<Equal<typeof body, undefined>>();
      return body === undefined;
    } });
    expect(await route.handler(input(undefined, {}))).to.equal(true);
  });

  it('an idempotent route keeps the schema-typed handler, and runs it when no key is sent', async () => {
    const store = new IdempotencyStore(() => {
      throw new Error('no Idempotency-Key: the store is not read');
    });
    // Inside a feature's route table, whose routes are untyped (Route<any, any>), as the features write them.
    const feature: Feature = {
      routes: [
        idempotent(store, defineRoute({
          ...base,
          body: { schema: bodySchema, limitBytes: 1024 },
          handler: ({ body }) => {
            assertType<Equal<typeof body, BodyOut>>();
            return { twice: body.count * 2 };
          },
        })),
      ],
    };
    const [route] = feature.routes;
    expect(await route.handler(input<BodyOut, ParsedUrlQuery>({ name: 'b', count: 21 }, {}))).to.deep.equal({ twice: 42 });
  });
});
