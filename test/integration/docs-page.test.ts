import { expect } from 'chai';
import { chromium, type Browser, type Request } from 'playwright-core';
import { startTestService, type TestService } from './harness.ts';
import { CHROMIUM, requireProgram } from './programs.ts';


/**
 * /docs in a real headless browser: the page loads Redoc from the service itself (no CDN), renders
 * /openapi.json, and shows every operation of the document.
 */
describe('/docs in a headless browser', function () {
  this.timeout(300_000);
  let service: TestService;
  let browser: Browser;

  before(async function () {
    // Debian's chromium (`.ci/run` installs it); no download, no network.
    const executablePath = requireProgram(this, CHROMIUM);
    service = await startTestService();
    browser = await chromium.launch({
      executablePath,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--disable-extensions', '--no-first-run'],
    });
  });
  after(async () => {
    await browser?.close();
    await service?.close();
  });

  it('renders every operation of the document, with no request leaving the service', async () => {
    const doc = (await service.request('GET', '/openapi.json')).body;
    const operationIds = Object.values(doc.paths as Record<string, Record<string, { operationId: string }>>).flatMap((ops) => Object.values(ops).map((op) => op.operationId));
    const page = await browser.newPage();
    const foreign: Request[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(service.url) && !r.url().startsWith('blob:') && !r.url().startsWith('data:')) foreign.push(r);
    });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    const res = await page.goto(`${service.url}/docs`);
    expect(res?.status()).to.equal(200);
    await page.waitForSelector(`[id="operation/${operationIds[0]}"]`, { timeout: 60_000 });
    const rendered = await page.$$eval('[id^="operation/"]', (els) => els.map((e) => e.id.slice('operation/'.length)));
    expect(rendered).to.include.members(operationIds);
    expect(await page.title()).to.include('tallyhouse');
    // Redoc's sidebar asks cdn.redoc.ly for its logo: the page's Content-Security-Policy must stop it.
    const escaped: string[] = [];
    for (const r of foreign) if ((await r.response()) !== null || !/^csp$|BLOCKED_BY_CSP/i.test(r.failure()?.errorText ?? '')) escaped.push(`${r.url()}: ${r.failure()?.errorText ?? 'answered'}`);
    expect(escaped, 'requests that left the service').to.deep.equal([]);
    expect(errors).to.deep.equal([]);
  });
});
