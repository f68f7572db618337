/**
 * Command-line arguments: node:util parseArgs in strict mode (an unknown option, a missing value
 * or a stray argument is an error, never ignored), its errors restated as one UsageError line
 * followed by the command's usage. main.ts exits 2 on a UsageError.
 */
import { parseArgs as nodeParseArgs, type ParseArgsConfig } from 'node:util';

export class UsageError extends Error {}

export type Options = NonNullable<ParseArgsConfig['options']>;

export interface ParsedArgs {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/** Every command takes -h/--help. */
export const HELP_OPTION: Options = { help: { type: 'boolean', short: 'h' } };

export function parseArgs(argv: readonly string[], options: Options, usage: string, maxPositionals = 0): ParsedArgs {
  let parsed: ParsedArgs;
  try {
    parsed = nodeParseArgs({ args: [...argv], options: { ...HELP_OPTION, ...options }, strict: true, allowPositionals: true }) as ParsedArgs;
  } catch (err) {
    const e = err as Error & { code?: string };
    if (!e.code?.startsWith('ERR_PARSE_ARGS')) throw err;
    throw new UsageError(`${restate(e)}\n\n${usage}`);
  }
  if (!parsed.values.help && parsed.positionals.length > maxPositionals) {
    throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[maxPositionals])}\n\n${usage}`);
  }
  return parsed;
}

/** Node's messages, shorter and in the CLI's words. */
function restate(e: Error & { code?: string }): string {
  const option = /'(-[^' ]+)/.exec(e.message)?.[1] ?? '';
  if (e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown option ${option}`;
  if (/argument missing/.test(e.message)) return `${option} needs a value`;
  if (/ambiguous/.test(e.message)) return `${option} needs a value (for a value starting with "-", write ${option}=<value>)`;
  if (/does not take an argument/.test(e.message)) return `${option} takes no value`;
  return e.message;
}

/** A string option's value, or undefined. */
export const stringValue = (values: ParsedArgs['values'], name: string): string | undefined => {
  const v = values[name];
  return typeof v === 'string' ? v : undefined;
};
