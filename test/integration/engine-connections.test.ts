import { expect } from 'chai';
import type { ClickHouseClient } from '@clickhouse/client';
import { ensureSharedEngine } from './shared-engine.ts';

/** The engine's count of HTTP connections it has accepted since it started. */
async function connectionsCreated(client: ClickHouseClient): Promise<number> {
  const rs = await client.query({ query: "SELECT value FROM system.events WHERE event = 'HTTPServerConnectionsCreated'", format: 'JSONEachRow' });
  const [row] = await rs.json<{ value: string | number }>();
  return Number(row?.value ?? 0);
}

describe('the service client and the embedded engine', () => {
  it('reuses its keep-alive connections: queries one after another do not each open a connection', async () => {
    const client = (await ensureSharedEngine()).adminClient();
    const before = await connectionsCreated(client);
    for (let i = 0; i < 30; i++) await (await client.query({ query: 'SELECT 1', format: 'JSONEachRow' })).json();
    const opened = (await connectionsCreated(client)) - before;
    // Node's HTTP agent drops a socket whose server announces a keep-alive timeout of 1 s or less,
    // so a too-short engine timeout makes every query pay a new connection (30 here).
    expect(opened, 'connections the engine accepted for 30 sequential queries').to.be.at.most(2);
  });
});
