import type { AppDeps } from '../server/context.ts';
import { answer, defineRoute, type Feature } from '../server/route.ts';
import { deletionResultSchema } from '../validation.ts';
import { deleteUser } from './delete-user.ts';
import { userAliasParam } from './rows.ts';
import { MAX_EVENT_BATCH_BYTES } from './limits.ts';
import { encodeEventBatch } from './encode.ts';
import { createEventCommitter } from './ingest.ts';
import { eventBatchSchema, ingestResultSchema } from './schema.ts';

/** POST /1.0/event, and the group committer its requests share (drained at shutdown). */
export function eventsFeature(deps: AppDeps): Feature {
  const committer = createEventCommitter(deps);
  return {
    drain: () => committer.drain(),
    routes: [
      defineRoute({
        operationId: 'sendEvents',
        method: 'POST',
        path: '/1.0/event',
        tag: 'events',
        summary: 'Send 1..100 events; 200 only after they are committed',
        scope: 'events',
        rateLimit: 'event',
        // A queue that is full or not moving refuses before the body is read (a fast 503).
        admit: () => committer.admit(),
        body: {
          schema: eventBatchSchema,
          // Checked and encoded in one walk; the schema answers the 400 (encode.ts).
          parse: (raw, auth) => {
            const receivedAt = new Date();
            return { chunk: encodeEventBatch(raw, auth.orgId, receivedAt), receivedAt: receivedAt.getTime() };
          },
          // Every batch the contract allows fits (limits.ts derives it: ~45 MB with everything escaped).
          limitBytes: Math.max(deps.config.bodyLimitBytes, MAX_EVENT_BATCH_BYTES),
          example: [{ type: 'track', event_name: 'signup', user_alias: 'user-42', properties: { plan: 'pro' } }],
        },
        success: { status: 200, description: 'Committed', schema: ingestResultSchema, example: { count: 100, duplicates: 3, lag: 12 } },
        errors: [400, 401, 403, 413, 415, 429, 503],
        handler: async ({ body: { chunk, receivedAt }, signal }) => {
          const committedAt = await committer.submit(chunk, chunk.rows, signal);
          return { count: chunk.rows, duplicates: chunk.duplicates, lag: committedAt - receivedAt };
        },
      }),
      defineRoute({
        operationId: 'deleteUser',
        method: 'DELETE',
        path: '/1.0/user/:user_alias',
        tag: 'events',
        summary: "Delete a user's data: their events, properties and group memberships",
        description:
          'Gone from event search, event aggregation and the user profile when the 202 is sent, and across restarts (lightweight DELETE: masked at once, ' +
          'removed from disk when the parts merge). Events sent for the alias afterwards are new events and are stored. An alias never seen counts 0.',
        scope: 'events',
        rateLimit: 'event',
        params: { user_alias: { description: 'The user_alias the events were sent with (URL-encoded)', schema: { type: 'string', minLength: 1, maxLength: 255 }, example: 'user-42' } },
        success: { status: 202, description: 'Deleted: the rows the user had (events, current properties and memberships)', schema: deletionResultSchema, example: { deleted: 12 } },
        errors: [400, 401, 403, 429, 503],
        handler: async ({ auth, params }) => {
          return answer({ status: 202, body: { deleted: await deleteUser(deps.db, auth.orgId, userAliasParam(params)) } });
        },
      }),
    ],
  };
}

