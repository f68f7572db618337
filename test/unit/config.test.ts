import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../src/config.ts';

describe('config', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({});
    expect(c.port).to.equal(8080);
    expect(c.host).to.equal('127.0.0.1');
    expect(c.clickhouse.url).to.equal(undefined);
    expect(c.clickhouse.database).to.equal('tallyhouse');
    expect(c.rateLimits).to.deep.equal({ eventsPerSecond: 50, releasesPerSecond: 10, queriesPerSecond: 20 });
    expect(c.bodyLimitBytes).to.equal(1024 * 1024);
  });

  const bad: Array<[string, string, RegExp]> = [
    ['PORT', 'eighty', /PORT="eighty".*integer from 0 to 65535/],
    ['PORT', '70000', /PORT="70000"/],
    ['RATE_LIMIT_EVENTS', '0', /RATE_LIMIT_EVENTS="0".*from 1/],
    ['LOG_LEVEL', 'loud', /LOG_LEVEL="loud".*one of debug, info, warn, error, silent/],
    ['CLICKHOUSE_URL', 'localhost:8123', /CLICKHOUSE_URL="localhost:8123".*http:\/\//],
    ['CLICKHOUSE_DATABASE', 'x; DROP', /CLICKHOUSE_DATABASE/],
    ['INGEST_BATCH_DELAY_MS', '-1', /INGEST_BATCH_DELAY_MS="-1"/],
  ];
  for (const [key, value, message] of bad) {
    it(`rejects ${key}=${value} naming the key, the value and what is allowed`, () => {
      expect(() => loadConfig({ [key]: value })).to.throw(ConfigError, message);
    });
  }
});
