// The demo plays in a real browser: hls.js in headless Chromium watches node-a (which
// ingests the meeting) and node-b (which pulls it) for 20 s each, with no fatal error.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startDemo, waitFor200, launchBrowser } from '../lib/cluster.mjs';

const PORT = Number(process.env.E2E_PORT || 18080);
let demo;
let browser;

before(async () => {
  demo = await startDemo(PORT);
  await waitFor200(`http://127.0.0.1:${PORT}/meeting/index.m3u8`);
  await waitFor200(`http://127.0.0.1:${PORT + 1}/meeting/index.m3u8`);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await demo?.stop();
});

for (const node of [0, 1]) {
  test(`hls.js plays the demo meeting from node ${'ab'[node]} for 20 s`, { timeout: 90_000 }, async () => {
    const page = await browser.newPage();
    const consoleErrors = [];
    page.on('pageerror', (e) => consoleErrors.push(String(e)));
    await page.goto(`http://127.0.0.1:${PORT + node}/player?stream=meeting`);
    await page.waitForFunction(() => window.__brdyun && window.__brdyun.currentTime > 1, null, { timeout: 30_000 });
    const start = await page.evaluate(() => window.__brdyun.currentTime);
    await page.waitForTimeout(20_000);
    const stats = await page.evaluate(() => window.__brdyun);
    await page.close();
    assert.deepEqual(stats.fatalErrors, [], `fatal errors: ${stats.fatalErrors}`);
    assert.deepEqual(consoleErrors, []);
    const played = stats.currentTime - start;
    assert.ok(played > 17, `played only ${played.toFixed(1)} s of 20 (stats ${JSON.stringify(stats)})`);
  });
}
