// The demo's ABR ladder in a real player (OTT-GRP-1): hls.js in headless Chromium sees
// the three rungs of the demo meeting, steps down when the network is throttled through
// the DevTools protocol and back up when it is released, with no stall and no fatal
// error; the viewer can pick a rung, and auto is the default.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startDemo, waitFor200, launchBrowser } from '../lib/cluster.mjs';

const PORT = Number(process.env.E2E_PORT || 18080) + 500;
const BASE = `http://127.0.0.1:${PORT}`;
let demo;
let browser;

before(async () => {
  demo = await startDemo(PORT);
  // The ladder is offered once the encoder has cut a segment of every rung.
  const deadline = Date.now() + 60_000;
  for (;;) {
    const master = await waitFor200(`${BASE}/meeting/index.m3u8`);
    if ((master.match(/#EXT-X-STREAM-INF/g) || []).length === 3) break;
    if (Date.now() > deadline) throw new Error(`the ladder is not offered: ${master}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await demo?.stop();
});

const stats = (page) => page.evaluate(() => window.__brdyun);

async function waitForLevel(page, wanted, what, limitMs) {
  try {
    await page.waitForFunction((w) => window.__brdyun.level === w, wanted, { timeout: limitMs });
  } catch (e) {
    throw new Error(`${what}: level ${wanted} not reached (${JSON.stringify(await stats(page))})`);
  }
}

test('hls.js steps down the ladder on a throttled network and back up, without a stall', { timeout: 240_000 }, async () => {
  const page = await browser.newPage();
  await page.goto(`${BASE}/player?stream=meeting`);
  await page.waitForFunction(() => window.__brdyun && window.__brdyun.currentTime > 1, null, { timeout: 30_000 });
  let s = await stats(page);
  assert.equal(s.levels.length, 3, `three rungs: ${JSON.stringify(s.levels)}`);
  const heights = s.levels.map((l) => l.height).sort((a, b) => a - b);
  assert.deepEqual(heights, [144, 240, 360]);
  const lowest = s.levels.findIndex((l) => l.height === 144);
  const highest = s.levels.findIndex((l) => l.height === 360);
  assert.equal(s.auto, true, 'auto by default');
  // Let the estimate settle on the fast loopback: the player climbs to the top rung.
  await waitForLevel(page, highest, 'on loopback', 60_000);

  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  // 360 kbit/s: below the 240p and 360p rungs' peaks, above the 144p rung's.
  await cdp.send('Network.emulateNetworkConditions', {
    offline: false, latency: 20, downloadThroughput: 360_000 / 8, uploadThroughput: 1_000_000 / 8,
  });
  await waitForLevel(page, lowest, 'throttled to 360 kbit/s', 90_000);
  await cdp.send('Network.emulateNetworkConditions', {
    offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1,
  });
  await waitForLevel(page, highest, 'released', 90_000);
  const before = (await stats(page)).currentTime;
  await page.waitForTimeout(5_000);
  s = await stats(page);
  await page.close();
  assert.deepEqual(s.fatalErrors, [], `fatal errors: ${s.fatalErrors}`);
  assert.equal(s.stalls, 0, `stalls while switching: ${JSON.stringify(s)}`);
  assert.ok(s.levelSwitches >= 2, `switched down and up: ${s.levelSwitches}`);
  assert.ok(s.currentTime - before > 4, 'still playing at the top rung');
});

test('the viewer picks a rung on the player page, and auto again', { timeout: 120_000 }, async () => {
  const page = await browser.newPage();
  await page.goto(`${BASE}/player?stream=meeting`);
  await page.waitForFunction(() => window.__brdyun && window.__brdyun.currentTime > 1, null, { timeout: 30_000 });
  const s = await stats(page);
  const mid = s.levels.findIndex((l) => l.height === 240);
  assert.ok(await page.isVisible('#quality'), 'the picker is shown for a ladder');
  await page.selectOption('#rung', String(mid));
  await waitForLevel(page, mid, 'picked 240p', 30_000);
  assert.equal((await stats(page)).auto, false);
  await page.waitForTimeout(4_000);
  assert.equal((await stats(page)).level, mid, 'a picked rung stays');
  await page.selectOption('#rung', '-1');
  assert.equal((await stats(page)).auto, true);
  const end = await stats(page);
  await page.close();
  assert.deepEqual(end.fatalErrors, [], `fatal errors: ${end.fatalErrors}`);
});
