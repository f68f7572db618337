import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** bench/results/ (gitignored): one JSON file per run. */
export const RESULTS_DIR = fileURLToPath(new URL('../results/', import.meta.url));

export function writeResult(name: string, data: unknown, dir = RESULTS_DIR): string {
  mkdirSync(dir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const path = join(dir, `${name}-${stamp}.json`);
  writeFileSync(path, JSON.stringify(data, null, 2) + '\n');
  return path;
}
