/** Minimal `--flag value` / `--flag=value` / `--switch` parsing for the CLI. */
export interface ParsedArgs {
  positional: string[];
  flags: Record<string, string | true>;
}

export function parseArgs(argv: string[], switches: readonly string[] = []): ParsedArgs {
  const positional: string[] = [];
  const flags: Record<string, string | true> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    if (eq !== -1) flags[name] = arg.slice(eq + 1);
    else if (switches.includes(name) || i + 1 >= argv.length || argv[i + 1].startsWith('--')) flags[name] = true;
    else flags[name] = argv[++i];
  }
  return { positional, flags };
}

export class UsageError extends Error {}
