import { parseArgs, type ParseArgsConfig } from 'node:util';

/** Flags of a bench: `--name value`, `--flag`; unknown flags are an error listing the known ones. */
export function parseFlags<T extends NonNullable<ParseArgsConfig['options']>>(argv: string[], options: T, usage: string) {
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values;
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${usage}\n`);
    process.exit(2);
  }
}

/** An integer flag >= min (a count: 50.5 events per batch or 2.5 tokens make no sense). */
export const positiveInt = (name: string, raw: string | undefined, fallback: number, min = 1) => numberFlag(name, raw, fallback, min, true);

/** A number flag >= min (a duration may be fractional). */
export const positiveNumber = (name: string, raw: string | undefined, fallback: number, min: number) => numberFlag(name, raw, fallback, min, false);

function numberFlag(name: string, raw: string | undefined, fallback: number, min: number, integer: boolean): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!(integer ? Number.isInteger(n) : Number.isFinite(n)) || n < min) {
    process.stderr.write(`--${name} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got "${raw}"\n`);
    process.exit(2);
  }
  return n;
}

/** `--env KEY=VALUE` (repeatable) -> an object. */
export function envPairs(list: string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of list ?? []) {
    const i = pair.indexOf('=');
    if (i <= 0) {
      process.stderr.write(`--env expects KEY=VALUE, got "${pair}"\n`);
      process.exit(2);
    }
    out[pair.slice(0, i)] = pair.slice(i + 1);
  }
  return out;
}
