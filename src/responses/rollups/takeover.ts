/**
 * Taking over the pending marks of a service process that stopped or died before recomputing what
 * it marked (owners.ts says which processes are dead and which live one takes them over). For
 * each dead owner: read its marks that do not sum to 0, recompute those slices from
 * survey_responses FINAL, then take back exactly its marks (-n as that owner), and record it as
 * taken over. The slices are then served by the rollups again.
 *
 * Why it is exact: the owner is dead, so every write it marked has ended (committed or not) and
 * no mark of it changes any more; the recompute starts after that and so sees every response
 * those writes stored. The marks of live owners are never read here, and those of NO_OWNER
 * (seed, rebuild) neither. Taking back the marks the owner has (not 1 per slice) also repairs an
 * owner whose marks a rebuild took back under a write in flight (a negative sum).
 */
import type { ClickHouseClient } from '@clickhouse/client';
import type { Logger } from '../../log.ts';
import { recomputeSlices } from './maintain.ts';
import { judgeOwners, processAlive, readOwners, writeOwner, type OwnerRow, type Self } from './owners.ts';
import { addMarks, marksOf, ORG_SENTINEL } from './pending.ts';
import type { HourSlice } from './slices.ts';

/** One check: when this process is the successor, takes over every dead owner; returns them. */
export async function takeOverDeadOwners(client: ClickHouseClient, self: Self, log: Logger, queryIdPrefix: string): Promise<string[]> {
  const { dead, successor } = judgeOwners(await readOwners(client), self, processAlive);
  if (successor !== self.owner || dead.length === 0) return [];
  const done: string[] = [];
  for (const owner of dead) {
    const slices = await takeOver(client, owner, self, queryIdPrefix);
    if (slices === null) break;
    done.push(owner.owner);
    if (slices > 0) log.info({ msg: 'took over the pending rollup marks of a stopped process', owner: owner.owner, pid: owner.pid, slices });
  }
  return done;
}

/** Recomputes and takes back the owner's marks; the slices, or null when no longer the successor. */
async function takeOver(client: ClickHouseClient, dead: OwnerRow, self: Self, queryIdPrefix: string): Promise<number | null> {
  // The org-wide mark is only written as NO_OWNER; an owner never holds one.
  const marks = (await marksOf(client, dead.owner)).filter((m) => !(m.slice.surveyId === ORG_SENTINEL.surveyId && m.slice.hour === ORG_SENTINEL.hour));
  const byOrg = new Map<string, { slice: HourSlice; marks: number }[]>();
  for (const m of marks) {
    let list = byOrg.get(m.orgId);
    if (!list) byOrg.set(m.orgId, (list = []));
    list.push({ slice: m.slice, marks: m.marks });
  }
  for (const [orgId, list] of byOrg) await recomputeSlices(client, orgId, list.map((d) => d.slice), queryIdPrefix);
  // A recompute takes time: a process that became the successor meanwhile (an older one that
  // came back) may be taking over the same owner; only one takes its marks back.
  if (judgeOwners(await readOwners(client), self, processAlive).successor !== self.owner) return null;
  for (const [orgId, list] of byOrg) await addMarks(client, orgId, list.map((d) => ({ slice: d.slice, marks: -d.marks })), dead.owner);
  await writeOwner(client, { owner: dead.owner, machine: dead.machine, pid: dead.pid, pidStart: dead.pidStart }, 'taken_over', dead.started);
  return marks.length;
}
