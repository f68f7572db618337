/**
 * Where the query bench keeps its data sets: a PERSISTENT directory per size (bench/.data/
 * query-<size>, gitignored), so that millions of responses are seeded once and reused by later
 * runs. The service itself is started by bench/lib/service.ts.
 */
import { resolve } from 'node:path';
import { REPO_ROOT } from '../lib/machine.ts';

/** One directory per data-set size (bench/.data/query-1M, ...): each table holds one set, merged on its own. */
export const dataDirFor = (label: string) => resolve(REPO_ROOT, `bench/.data/query-${label}`);
