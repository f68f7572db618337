/**
 * `tallyhouse rollups rebuild [--org ID]`: recovery. Recomputes every rollup slice of one
 * organization (or of every organization) from the stored responses and clears the pending marks
 * that interrupted writes left (schema/020-survey-rollups.sql). Until then, those slices are read
 * from the raw table: correct, only slower.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { UsageError, stringValue, type Options, type ParsedArgs } from '../../cli/args.ts';
import { allOrgs, rebuildOrg } from './maintain.ts';
import { UUID_PATTERN } from '../../uuid.ts';

export const ROLLUPS_REBUILD = {
  usage: `usage: tallyhouse rollups rebuild [--org ID]
  --org ID    only this organization (default: every organization)
Recomputes the survey rollups from the stored responses and clears the pending marks that
interrupted writes left; until then those slices are read from the raw table (correct, slower).`,
  options: { org: { type: 'string' } } satisfies Options,
};

/** Checks the arguments before any engine starts; returns the org, or null for all. */
export function rollupsOrg(args: ParsedArgs): string | null {
  const org = stringValue(args.values, 'org');
  if (org === undefined) return null;
  if (!UUID_PATTERN.test(org)) throw new UsageError(`--org must be an organization UUID\n\n${ROLLUPS_REBUILD.usage}`);
  return org.toLowerCase();
}

export async function rollupsRebuild(client: ClickHouseClient, args: ParsedArgs, out: (line: string) => void): Promise<void> {
  const orgId = rollupsOrg(args);
  const orgs = orgId ? [orgId] : await allOrgs(client);
  for (const org of orgs) {
    const started = performance.now();
    const { slices } = await rebuildOrg(client, org);
    out(`rebuilt rollups of org ${org}: ${slices} hour slices in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  if (orgs.length === 0) out('no organization has survey responses');
}
