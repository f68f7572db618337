/**
 * `tallyhouse seed` arguments: `--responses N [--org ID] [--surveys S] [--days D] [--seed X]`.
 * Pure, so every error message is unit-tested; errors are UsageError (exit code 2 in main.ts).
 */
import { randomUUID } from 'node:crypto';
import { parseArgs, UsageError, type Options, type ParsedArgs } from '../cli/args.ts';
import { EVENT_SEED_LIMITS } from './events.ts';
import { UUID_PATTERN } from '../uuid.ts';
import { SEED_LIMITS } from './responses.ts';

export interface SeedArgs {
  /** 0 when only events are asked for. */
  responses: number;
  /** 0 when only responses are asked for. */
  events: number;
  orgId: string;
  /** Whether orgId was generated (then the command prints it, so tokens can be minted for it). */
  orgGenerated: boolean;
  surveys: number;
  days: number;
  seed: number;
}

export const SEED_USAGE = `usage: tallyhouse seed [--responses N] [--events N] [--org ID] [--surveys S] [--days D] [--seed X]
  --responses N   responses to write, ${SEED_LIMITS.responses.min}..${SEED_LIMITS.responses.max} (10000, 10_000, 500k, 10M)
  --events N      events to write (the ingest bench's mix of types, users and groups), ${EVENT_SEED_LIMITS.min}..${EVENT_SEED_LIMITS.max}
                  (at least one of --responses and --events)
  --org ID        organization UUID (default: a new random one, printed)
  --surveys S     surveys to spread them over, ${SEED_LIMITS.surveys.min}..${SEED_LIMITS.surveys.max} (default 5)
  --days D        created_at (and event timestamps) span the last D days, ${SEED_LIMITS.days.min}..${SEED_LIMITS.days.max} (default 90)
  --seed X        variant of the data, ${SEED_LIMITS.seed.min}.. (default 0)
Each run adds new responses; runs for one org and seed share its surveys, respondents and groups.`;

export const SEED_OPTIONS: Options = {
  responses: { type: 'string' },
  events: { type: 'string' },
  org: { type: 'string' },
  surveys: { type: 'string' },
  days: { type: 'string' },
  seed: { type: 'string' },
};
const MULTIPLIER: Record<string, number> = { '': 1, k: 1_000, m: 1_000_000 };

/** A whole number as people type it: `10000`, `10_000`, `10,000`, `500k`, `10M`. */
export function parseCount(raw: string): number | undefined {
  const m = /^(\d+(?:[_,]\d{3})*|\d+(?:\.\d+)?(?=[kKmM]))([kKmM]?)$/.exec(raw.trim());
  if (!m) return undefined;
  const n = Number(m[1].replace(/[_,]/g, '')) * MULTIPLIER[m[2].toLowerCase()];
  return Number.isSafeInteger(n) ? n : undefined;
}

const LIMITS = { ...SEED_LIMITS, events: EVENT_SEED_LIMITS };

function count(flags: ParsedArgs['values'], name: keyof typeof LIMITS, fallback?: number): number {
  const raw = flags[name] as string | undefined;
  if (raw === undefined) {
    if (fallback === undefined) throw new UsageError(`--${name} is required\n\n${SEED_USAGE}`);
    return fallback;
  }
  const { min, max } = LIMITS[name];
  const n = parseCount(raw);
  if (n === undefined || n < min || n > max) {
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

export function parseSeedArgs(argv: string[]): SeedArgs {
  const { values: flags } = parseArgs(argv, SEED_OPTIONS, SEED_USAGE);

  if (flags.responses === undefined && flags.events === undefined) throw new UsageError(`--responses or --events is required\n\n${SEED_USAGE}`);
  const responses = flags.responses === undefined ? 0 : count(flags, 'responses');
  const events = flags.events === undefined ? 0 : count(flags, 'events');
  const surveys = count(flags, 'surveys', 5);
  const days = count(flags, 'days', 90);
  const seed = count(flags, 'seed', 0);
  const org = flags.org as string | undefined;
  if (org !== undefined && !UUID_PATTERN.test(org)) {
    throw new UsageError(`--org must be an organization UUID, e.g. ${randomUUID()}, got ${JSON.stringify(org)}`);
  }
  return { responses, events, orgId: org === undefined ? randomUUID() : org.toLowerCase(), orgGenerated: org === undefined, surveys, days, seed };
}
