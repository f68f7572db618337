import type { ClickHouseClient } from '@clickhouse/client';

/**
 * Waits until the engine runs no merge (of `table` in the client's database, or of any table),
 * polling every `pollMs`, up to `timeoutMs`. True when none is left. Benches measure from a quiet
 * engine: merges started by the previous phase, or by a seed, would otherwise share the CPUs.
 */
export async function waitForMerges(
  client: ClickHouseClient,
  opts: { timeoutMs: number; pollMs: number; table?: string; log?: (line: string) => void },
): Promise<boolean> {
  const deadline = Date.now() + opts.timeoutMs;
  let said = false;
  for (;;) {
    const rs = await client.query({
      query: `SELECT count() AS n FROM system.merges${opts.table ? ' WHERE database = currentDatabase() AND table = {table:String}' : ''}`,
      query_params: opts.table ? { table: opts.table } : {},
      format: 'JSONEachRow',
    });
    const n = Number(((await rs.json()) as Array<{ n: string | number }>)[0]?.n ?? 0);
    if (n === 0) return true;
    if (Date.now() > deadline) return false;
    if (!said) opts.log?.(`waiting for ${n} background merge(s) to finish before measuring`);
    said = true;
    await new Promise((r) => setTimeout(r, opts.pollMs));
  }
}
