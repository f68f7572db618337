import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Database } from '../clickhouse/connection.ts';
import type { Logger } from '../log.ts';
import { seedEvents } from '../seed/events.ts';
import { seedResponses } from '../seed/responses.ts';
import { QuestionKind, planSurveys } from '../seed/plan.ts';
import { createRelease } from '../releases/store.ts';
import { fromMillis } from '../time/iso.ts';
import { TokenCache } from '../tokens/cache.ts';
import { mintToken, SCOPES, type Scope } from '../tokens/tokens.ts';

export interface Demo {
  org_id: string;
  tokens: Record<Scope, string>;
  survey_ids: string[];
}

const DEMO_RESPONSES = 5000;
/** 200 users (user-1 .. user-200) over 30 days, the ingest bench's mix. */
const DEMO_EVENTS = 20_000;
/** The event users are the respondents too, so the feedback-cohort examples of docs/api.md answer something. */
const DEMO_USERS = 200;

/**
 * First run on an empty embedded data directory: a demo organization with one token per scope and
 * a few thousand survey responses and events, so every endpoint answers with data out of the box. The tokens
 * are kept in DATA_DIR/demo.json (mode 0600, inside the 0700 data directory) so later starts can
 * print them again; the database still stores only their hashes.
 */
export async function ensureDemo(db: Database, dataDir: string, log: Logger): Promise<Demo> {
  const file = join(dataDir, 'demo.json');
  if (existsSync(file)) {
    const demo = JSON.parse(readFileSync(file, 'utf8')) as Demo;
    const cache = new TokenCache(0);
    const alive = await Promise.all(SCOPES.map((s) => cache.lookup(db.client(), demo.tokens[s] ?? '')));
    if (alive.every(Boolean)) return demo;
    log.warn({ msg: 'demo tokens were revoked or lost; minting new ones' });
    const tokens = await mintAll(db, demo.org_id);
    const renewed = { ...demo, tokens };
    writeFileSync(file, JSON.stringify(renewed, null, 2), { mode: 0o600 });
    return renewed;
  }
  const orgId = randomUUID();
  const tokens = await mintAll(db, orgId);
  log.info({ msg: 'seeding demo survey responses', responses: DEMO_RESPONSES });
  const seeded = await seedResponses(db.client(), { orgId, responses: DEMO_RESPONSES, surveys: 3, days: 30, respondents: DEMO_USERS, eventUsers: true });
  log.info({ msg: 'seeding demo events', events: DEMO_EVENTS });
  await seedEvents(db.client(), { orgId, events: DEMO_EVENTS, days: 30, users: DEMO_USERS, db });
  // A release in the middle of the data: the histograms mark it, and `/1.0/release/latest/impact` compares the 14 days around it.
  await createRelease(db.client(), orgId, { name: 'Demo release', version: '1.0.0', description: '', tags: ['demo'], released_at: fromMillis(Date.now() - 15 * 86_400_000) });
  const demo: Demo = { org_id: orgId, tokens, survey_ids: seeded.surveyIds };
  writeFileSync(file, JSON.stringify(demo, null, 2), { mode: 0o600 });
  return demo;
}

async function mintAll(db: Database, orgId: string): Promise<Record<Scope, string>> {
  const tokens = {} as Record<Scope, string>;
  for (const scope of SCOPES) tokens[scope] = (await mintToken(db, orgId, [scope], `demo ${scope}`)).token;
  return tokens;
}

/** Without demo data (TALLYHOUSE_DEMO=0, or a ClickHouse server): where it runs, how to get a token. */
export function plainBanner(baseUrl: string, mode: string): string {
  return `
tallyhouse is running at ${baseUrl} (${mode === 'external' ? 'ClickHouse at CLICKHOUSE_URL' : 'embedded ClickHouse engine'})

Create a token:  tallyhouse token create --org <uuid> --scope events,releases,responses:read,responses:write

API docs: ${baseUrl}/docs (OpenAPI: ${baseUrl}/openapi.json) and docs/api.md. Stop with Ctrl-C.
`;
}

/** The correlation id of the demo's first survey's NPS question (the seed plan's, src/seed/plan.ts): answer filters' `key`. */
export function demoNpsQuestion(demo: Demo): string {
  const first = planSurveys(demo.org_id.toLowerCase(), 0, Math.max(1, demo.survey_ids.length))[0];
  return first.questionCorrelationIds[first.kinds.indexOf(QuestionKind.nps)];
}

export function demoBanner(demo: Demo, baseUrl: string): string {
  const t = demo.tokens;
  const survey = demo.survey_ids[0] ?? '*';
  // Seven whole days ending today: exactly seven daily buckets (the range end is inclusive).
  const weekAgo = new Date(Date.now() - 6 * 86400_000).toISOString().slice(0, 10);
  const today = new Date().toISOString().slice(0, 10);
  return `
tallyhouse is running at ${baseUrl} (embedded ClickHouse engine)

Demo organization ${demo.org_id}
  events           ${t.events}
  events:read      ${t['events:read']}
  releases         ${t.releases}
  responses:read   ${t['responses:read']}
  responses:write  ${t['responses:write']}

For the examples of README.md and docs/api.md, paste:
  export EVENTS_TOKEN=${t.events}
  export EVENTS_READ_TOKEN=${t['events:read']}
  export RELEASES_TOKEN=${t.releases}
  export READ_TOKEN=${t['responses:read']}
  export WRITE_TOKEN=${t['responses:write']}
  export NPS_QUESTION=${demoNpsQuestion(demo)}

Try it:

curl -s -X POST ${baseUrl}/1.0/event -H 'Authorization: Bearer ${t.events}' -H 'Content-Type: application/json' \\
  -d '[{"type":"track","event_name":"signup","user_alias":"user-42","properties":{"plan":"pro"}},{"type":"page","url":"https://example.com/pricing"}]'

curl -s -X POST ${baseUrl}/1.0/release -H 'Authorization: Bearer ${t.releases}' -H 'Content-Type: application/json' \\
  -d '{"name":"Spring release","version":"2.4.0","tags":["web"]}'

curl -s ${baseUrl}/1.0/release -H 'Authorization: Bearer ${t.releases}'

curl -s -X SEARCH '${baseUrl}/1.0/survey/*/response' -H 'Authorization: Bearer ${t['responses:read']}' -H 'Content-Type: application/json' \\
  -d '{"size":2,"filters":[{"type":"response","key":"completion","operator":"eq","value":"fully_completed"}]}'

curl -s -X SEARCH '${baseUrl}/1.0/survey/${survey}/response/summary' -H 'Authorization: Bearer ${t['responses:read']}' -H 'Content-Type: application/json' \\
  -d '{"range":{"field":"created_at","start":"${weekAgo}T00:00:00Z","end":"${today}T23:59:59Z"}}'

curl -s -X SEARCH '${baseUrl}/1.0/survey/*/response/aggregation' -H 'Authorization: Bearer ${t['responses:read']}' -H 'Content-Type: application/json' \\
  -d '{"range":{"field":"created_at","start":"${weekAgo}T00:00:00Z","end":"${today}T23:59:59Z"},"group_by":[{"field":"completion"},{"field":"created_at","date_histogram_min_interval":"day","date_histogram_buckets":7}]}'

curl -s -X SEARCH ${baseUrl}/1.0/event -H 'Authorization: Bearer ${t['events:read']}' -H 'Content-Type: application/json' \\
  -d '{"size":2,"filters":[{"key":"type","operator":"eq","value":"track"},{"key":"property","property_key":"plan","operator":"eq","value":"pro"}]}'

curl -s -X SEARCH ${baseUrl}/1.0/event/aggregation -H 'Authorization: Bearer ${t['events:read']}' -H 'Content-Type: application/json' \\
  -d '{"range":{"field":"timestamp","start":"${weekAgo}T00:00:00Z","end":"${today}T23:59:59Z"},"group_by":[{"field":"event_name"},{"field":"timestamp","date_histogram_min_interval":"day","date_histogram_buckets":7}],"metrics":["count","unique_users"]}'

curl -s ${baseUrl}/1.0/user/user-1 -H 'Authorization: Bearer ${t['events:read']}'

API docs: ${baseUrl}/docs (OpenAPI: ${baseUrl}/openapi.json) and docs/api.md. Stop with Ctrl-C.
`;
}
