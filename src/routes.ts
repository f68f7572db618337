/**
 * The composition root of the HTTP API: every feature's route table. server/ runs these tables
 * and imports no feature; main.ts and the tests hand them to createApp.
 */
import { eventAnalysisFeature } from './events/analysis/routes.ts';
import { eventReadsFeature } from './events/read/routes.ts';
import { eventsFeature } from './events/routes.ts';
import { releasesFeature } from './releases/routes.ts';
import { responsesFeature } from './responses/routes.ts';
import type { AppDeps } from './server/context.ts';
import type { Feature } from './server/route.ts';

export function features(deps: AppDeps): Feature[] {
  return [eventsFeature(deps), eventReadsFeature(deps), eventAnalysisFeature(deps), releasesFeature(deps), responsesFeature(deps)];
}
