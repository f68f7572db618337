import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import * as v from 'valibot';
import { impactResultSchema, impactWindows } from '../../src/analysis/release-impact.ts';
import { countDifference, proportionDifference } from '../../src/metrics/statistics.ts';
import { startTestService, type TestService } from './harness.ts';
import { isoMicros } from './random.ts';

type Rec = Record<string, any>;
const DAY = 86_400_000;
const HOUR = 3_600_000;

/**
 * SEARCH /1.0/release/<id>/impact over HTTP: the windows, the survey metrics and the event figures
 * of each side against counts made here from what was written, and the scopes each part needs.
 */
describe('release impact (HTTP)', function () {
  this.timeout(180_000);
  let svc: TestService;
  let both: string;
  let releaseId: string;
  // Events are kept only within 7 days of reception: the release is 3 days ago, the windows 3 days.
  const now = Date.now();
  const released = Math.floor((now - 3 * DAY) / 1000) * 1000;
  const survey = randomUUID();
  const otherSurvey = randomUUID();
  const npsQ = randomUUID();
  const responses: Rec[] = [];
  const events: Rec[] = [];

  const response = (at: number, score: number, completion: string, surveyId = survey) => ({
    id: randomUUID(), survey_id: surveyId, channel_id: randomUUID(), respondent_id: randomUUID(), language: 'en', completion, active: false,
    end_reason: 'completed', ended_at: isoMicros(at + 1000), created_at: isoMicros(at), updated_at: isoMicros(at + 1000), hidden_fields: [],
    answers: [{ t: 2, v_d: score, cta_type: 'nps', question_id: npsQ, question_correlation_id: npsQ }],
  });

  before(async () => {
    svc = await startTestService();
    both = await svc.token(['responses:read', 'events:read']);
    // Before: mostly detractors; after: mostly promotors (a change the test must find significant).
    for (let i = 0; i < 60; i++) responses.push(response(released - (i + 1) * HOUR, i % 4 === 0 ? 9 : 3, i % 2 ? 'fully_completed' : 'partially_completed'));
    for (let i = 0; i < 60; i++) responses.push(response(released + i * HOUR, i % 4 === 0 ? 3 : 10, 'fully_completed'));
    for (let i = 0; i < 10; i++) responses.push(response(released + i * HOUR, 7, 'fully_completed', otherSurvey));
    // Outside both windows: not counted.
    responses.push(response(released - 4 * DAY, 0, 'not_started'), response(released - 4 * DAY - 1, 10, 'not_started'));
    const t = (offset: number) => new Date(released + offset).toISOString();
    for (let i = 0; i < 30; i++) events.push({ type: 'track', event_name: 'signup', user_alias: `u${i % 10}`, timestamp: t(-(i + 1) * HOUR) });
    for (let i = 0; i < 90; i++) events.push({ type: 'track', event_name: 'signup', user_alias: `u${i % 40}`, timestamp: t(i * HOUR / 2) });
    for (let i = 0; i < 5; i++) events.push({ type: 'track', event_name: 'rare', user_alias: 'u1', timestamp: t(i * HOUR) });
    events.push({ type: 'page', url: 'https://example.com/', user_alias: 'u1', timestamp: t(HOUR) }); // no name: not listed
    const copilot = (name: string, user: string, offset: number, extra: Rec = {}) =>
      events.push({ type: 'copilot', event_name: name, agent_id: 'a', user_alias: user, timestamp: t(offset), ...(name === 'service_copilot_conversion' ? {} : { conversation_id: 'c', copilot_session_id: 's' }), ...extra });
    // Satisfaction: before 2 of 5 ratings satisfied (4+ on 1-5), after 4 of 5; one rating off its scale is not counted.
    [1, 2, 4, 5, 3].forEach((r, i) => copilot('service_copilot_satisfaction', `c${i}`, -(i + 1) * HOUR, { rating: String(r), rating_scale: '1-5' }));
    [5, 4, 4, 5, 2].forEach((r, i) => copilot('service_copilot_satisfaction', `c${i}`, (i + 1) * HOUR, { rating: String(r), rating_scale: '1-5' }));
    copilot('service_copilot_satisfaction', 'c9', 2 * HOUR, { rating: '9', rating_scale: '1-5' });
    // Conversion: before 4 prompting users, 1 converts; after 4 prompting users, 3 convert (and one converts without a prompt).
    ['p1', 'p2', 'p3', 'p4'].forEach((u, i) => copilot('service_copilot_user_prompt', u, -(i + 1) * HOUR, { prompt: 'hi' }));
    copilot('service_copilot_conversion', 'p1', -HOUR / 2);
    ['q1', 'q2', 'q3', 'q4'].forEach((u, i) => copilot('service_copilot_user_prompt', u, (i + 1) * HOUR, { prompt: 'hi' }));
    ['q1', 'q2', 'q3', 'z9'].forEach((u) => copilot('service_copilot_conversion', u, 6 * HOUR));

    const write = await svc.request('POST', '/1.0/survey/response', { token: await svc.token(['responses:write']), body: responses });
    expect(write.status, JSON.stringify(write.body)).to.equal(200);
    const eventsToken = await svc.token(['events']);
    for (let i = 0; i < events.length; i += 100) {
      const res = await svc.request('POST', '/1.0/event', { token: eventsToken, body: events.slice(i, i + 100) });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
    }
    const rel = await svc.request('POST', '/1.0/release', { token: await svc.token(['releases']), body: { name: 'Spring', version: '2.0', released_at: new Date(released).toISOString() } });
    releaseId = rel.body.id;
    await svc.settle();
  });
  after(() => svc.close());

  const impact = (id: string, token: string, body: Rec = { days: 3 }) => svc.request('SEARCH', `/1.0/release/${id}/impact`, { token, body });

  it('compares the days before and after with every figure counted from what was written', async () => {
    const res = await impact(releaseId, both);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(v.safeParse(impactResultSchema, res.body).success).to.equal(true);
    const b = res.body;
    expect(b.release.id).to.equal(releaseId);
    expect(b.before.range).to.deep.equal({ start: isoMicros(released - 3 * DAY), end: `${isoMicros(released - 1).slice(0, 23)}999Z` });
    expect(b.after.range.start).to.equal(isoMicros(released));
    // Survey metrics: 60 responses before (15 promotors, 45 detractors), 70 after.
    expect(b.before.responses).to.equal(60);
    expect(b.before.metrics.nps).to.include({ promotor: 15, detractor: 45, neutral: 0, total: 60, score: -50 });
    expect(b.after.responses).to.equal(70);
    expect(b.after.metrics.nps).to.include({ promotor: 45, detractor: 15, neutral: 10, total: 70 });
    expect(b.after.metrics.nps.delta).to.equal(Math.round(((45 - 15) / 70) * 10000) / 100 - -50);
    expect(b.after.metrics.nps.significant).to.equal(true);
    expect(b.before.metrics.completion).to.include({ fully_completed: 30, partially_completed: 30, rate: 0.5 });
    expect(b.after.metrics.completion).to.include({ fully_completed: 70, rate: 1 });
    expect(b.after.metrics.completion.significant).to.equal(true);
    expect(b.after.metrics.csat).to.include({ avg: null, n: 0, delta: null, significant: false });

    // Events: by name, most frequent first; the page view has no name.
    expect(b.events.map((e: Rec) => e.event_name)).to.deep.equal(['signup', 'service_copilot_satisfaction', 'service_copilot_user_prompt', 'rare', 'service_copilot_conversion']);
    const signup = b.events[0];
    expect(signup.before).to.deep.equal({ count: 30, users: 10 });
    const d = countDifference(90, 30);
    expect(signup.after).to.include({ count: 90, users: 40, count_delta: 60, count_significant: d.significant, users_delta: 30 });
    expect(d.significant).to.equal(true);
    expect(b.events[3]).to.deep.include({ event_name: 'rare', before: { count: 0, users: 0 } });

    // Copilot: 2/5 satisfied before, 4/5 after (the rating off its scale left out); conversion 1/4 -> 3/4.
    expect(b.copilot.satisfaction.before).to.include({ rate: 0.4, n: 5 });
    expect(b.copilot.satisfaction.after).to.include({ rate: 0.8, n: 5, delta: 0.4, significant: proportionDifference({ successes: 4, n: 5 }, { successes: 2, n: 5 })!.significant });
    expect(b.copilot.conversion.before).to.include({ rate: 0.25, n: 4 });
    expect(b.copilot.conversion.after).to.include({ rate: 0.75, n: 4, delta: 0.5 });
    expect(b.omitted).to.equal(undefined);
  });

  it('per survey with survey_ids; `latest` is the newest release already released', async () => {
    const res = await impact('latest', both, { days: 3, survey_ids: [survey, otherSurvey.toUpperCase()] });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.release.id).to.equal(releaseId);
    expect(res.body.after.responses).to.equal(70);
    expect(res.body.surveys.map((s: Rec) => [s.survey_id, s.before.responses, s.after.responses])).to.deep.equal([[survey, 60, 60], [otherSurvey, 0, 10]]);
    const only = await impact(releaseId, both, { days: 3, survey_ids: [otherSurvey] });
    expect(only.body.after.metrics.nps).to.include({ neutral: 10, total: 10, score: 0 });
  });

  it('scopes: each part needs the scope that reads its data; `releases` alone reads nothing', async () => {
    const surveysOnly = await impact(releaseId, await svc.token(['responses:read']));
    expect(surveysOnly.status).to.equal(200);
    expect(surveysOnly.body.after.metrics.nps.total).to.equal(70);
    expect(surveysOnly.body).to.not.have.any.keys('events', 'copilot');
    expect(surveysOnly.body.omitted).to.deep.equal(['events and copilot (needs events:read)']);
    const eventsOnly = await impact(releaseId, await svc.token(['events:read']));
    expect(eventsOnly.status).to.equal(200);
    expect(eventsOnly.body.after).to.have.keys('range');
    expect(eventsOnly.body.events[0].event_name).to.equal('signup');
    expect(eventsOnly.body.omitted).to.deep.equal(['survey metrics (needs responses:read)']);
    const releasesOnly = await impact(releaseId, await svc.token(['releases']));
    expect(releasesOnly.status).to.equal(403);
    expect(releasesOnly.body.error.message).to.match(/"responses:read" or "events:read"/);
  });

  it('unknown and foreign ids are the same 404; bad input is a 400 naming it; a future release is a 409', async () => {
    const other = await svc.token(['releases'], randomUUID());
    const foreign = await svc.request('POST', '/1.0/release', { token: other, body: { name: 'Theirs', version: '1' } });
    const a = await impact(foreign.body.id, both);
    const b = await impact(randomUUID(), both);
    expect([a.status, b.status]).to.deep.equal([404, 404]);
    expect(a.body.error.message.replace(foreign.body.id, 'X')).to.equal(b.body.error.message.replace(/No release \S+/, 'No release X'));
    const bad = await impact('nope', both);
    expect(bad.status).to.equal(400);
    expect(bad.body.error.issues[0].path).to.equal('release_id');
    for (const [body, path] of [[{ days: 0 }, 'days'], [{ days: 91 }, 'days'], [{ survey_ids: ['x'] }, 'survey_ids[0]'], [{ survey_ids: [] }, 'survey_ids'], [{ day: 3 }, 'day']] as const) {
      const res = await impact(releaseId, both, body);
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.body.error.issues.map((i: Rec) => i.path), JSON.stringify(res.body)).to.include(path);
    }
    const future = await svc.request('POST', '/1.0/release', { token: await svc.token(['releases']), body: { name: 'Next', version: '3', released_at: new Date(now + 30 * DAY).toISOString() } });
    expect((await impact(future.body.id, both)).status).to.equal(409);
    // `latest` is still the one already released.
    expect((await impact('latest', both)).body.release.id).to.equal(releaseId);
  });

  it('the event histograms list the release too, with the bucket it falls in, with a range or over the data\'s span', async () => {
    const range = { field: 'timestamp', start: new Date(released - 2 * DAY).toISOString(), end: new Date(released + 2 * DAY - 1).toISOString() };
    const body = { range, group_by: [{ field: 'event_name' }, { field: 'timestamp', date_histogram_min_interval: 'day', date_histogram_buckets: 4 }] };
    const res = await svc.request('SEARCH', '/1.0/event/aggregation', { token: both, body });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const signup = res.body.aggregations.buckets.find((b: Rec) => b.key === 'signup');
    expect(signup.aggregations.releases).to.deep.equal([{ id: releaseId, name: 'Spring', version: '2.0', released_at: new Date(released).toISOString(), bucket: isoMicros(released) }]);
    // Without a range the series starts on the day of the first event: the release falls in its day.
    const noRange = await svc.request('SEARCH', '/1.0/event/aggregation', { token: both, body: { group_by: body.group_by } });
    const day = isoMicros(Math.floor(released / DAY) * DAY);
    expect(noRange.body.aggregations.buckets.find((b: Rec) => b.key === 'signup').aggregations.releases).to.deep.equal([{ id: releaseId, name: 'Spring', version: '2.0', released_at: new Date(released).toISOString(), bucket: day }]);
  });

  it('windows: N days after, cut at now, and as long right before', () => {
    const at = 1_000_000_000n;
    expect(impactWindows(at, 2, at + 10n * 86_400_000_000n)).to.deep.equal({
      at, before: { start: at - 2n * 86_400_000_000n, end: at - 1n }, after: { start: at, end: at + 2n * 86_400_000_000n - 1n },
    });
    expect(impactWindows(at, 2, at + 99n)).to.deep.equal({ at, before: { start: at - 100n, end: at - 1n }, after: { start: at, end: at + 99n } });
    expect(impactWindows(at, 2, at - 1n)).to.equal(null);
  });
});
