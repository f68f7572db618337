/**
 * `tallyhouse rollups rebuild [--org ID]`: recovery. Recomputes every rollup slice of one
 * organization (or of every organization) from the stored responses and clears the pending marks
 * that interrupted writes left (schema/020-survey-rollups.sql). Until then, those slices are read
 * from the raw table: correct, only slower.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { UsageError, parseArgs } from '../../cli/args.ts';
import { allOrgs, rebuildOrg } from './maintain.ts';

export const ROLLUPS_USAGE = 'rollups rebuild [--org ID]  recompute the survey rollups (all organizations by default)';

const UUID = /^[\da-f]{8}(?:-[\da-f]{4}){3}-[\da-f]{12}$/i;

/** Checks the arguments before any engine starts; returns the org, or null for all. */
export function parseRollupsArgs(argv: string[]): { orgId: string | null } {
  const { positional, flags } = parseArgs(argv);
  if (positional.length !== 1 || positional[0] !== 'rebuild') throw new UsageError(`usage: tallyhouse ${ROLLUPS_USAGE}`);
  for (const name of Object.keys(flags)) if (name !== 'org') throw new UsageError(`unknown flag --${name}; usage: tallyhouse ${ROLLUPS_USAGE}`);
  const org = flags.org;
  if (org === undefined) return { orgId: null };
  if (org === true || !UUID.test(org)) throw new UsageError('--org must be an organization UUID');
  return { orgId: org.toLowerCase() };
}

export async function runRollupsCommand(client: ClickHouseClient, argv: string[], out: (line: string) => void): Promise<void> {
  const { orgId } = parseRollupsArgs(argv);
  const orgs = orgId ? [orgId] : await allOrgs(client);
  for (const org of orgs) {
    const started = performance.now();
    const { slices } = await rebuildOrg(client, org);
    out(`rebuilt rollups of org ${org}: ${slices} hour slices in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  if (orgs.length === 0) out('no organization has survey responses');
}
