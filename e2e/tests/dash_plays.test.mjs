// DASH plays in a real browser (issue 7): dash.js in headless Chromium watches the demo
// meeting's live MPD on node b (which pulls the meeting) for 20 s with no error, then a
// catch-up period as a static MPD derived from the TS archive.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startDemo, waitFor200, launchBrowser } from '../lib/cluster.mjs';

const PORT = Number(process.env.E2E_PORT || 18080) + 300;
const BASE = `http://127.0.0.1:${PORT + 1}`;
const DASH_JS = fileURLToPath(new URL('../node_modules/dashjs/dist/modern/umd/dash.all.min.js', import.meta.url));
let demo;
let browser;

before(async () => {
  demo = await startDemo(PORT);
  await waitFor200(`${BASE}/meeting/index.mpd`);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await demo?.stop();
});

/** A blank page with a muted video element and dash.js playing `url`; progress and
 * errors land in `window.__dash`. */
async function dashPage(url) {
  const page = await browser.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.setContent('<video id="v" muted autoplay playsinline></video>');
  await page.addScriptTag({ path: DASH_JS });
  await page.evaluate((src) => {
    const stats = { errors: [], currentTime: 0, latency: null };
    window.__dash = stats;
    const video = document.getElementById('v');
    const player = dashjs.MediaPlayer().create();
    player.updateSettings({ debug: { logLevel: dashjs.Debug.LOG_LEVEL_WARNING } });
    player.on(dashjs.MediaPlayer.events.ERROR, (e) => stats.errors.push(JSON.stringify(e.error || e)));
    player.on(dashjs.MediaPlayer.events.PLAYBACK_ERROR, (e) => stats.errors.push(`playback ${JSON.stringify(e.error || e)}`));
    video.addEventListener('timeupdate', () => {
      stats.currentTime = video.currentTime;
      if (player.isDynamic()) stats.latency = player.getCurrentLiveLatency();
    });
    player.initialize(video, src, true);
    window.__player = player;
  }, url);
  return { page, pageErrors };
}

test('dash.js plays the live MPD for 20 s', { timeout: 90_000 }, async () => {
  const { page, pageErrors } = await dashPage(`${BASE}/meeting/index.mpd`);
  // Measured from 3 s of playback on: dash.js settles its live position first.
  await page.waitForFunction(() => window.__dash.currentTime > 3, null, { timeout: 40_000 });
  const start = await page.evaluate(() => window.__dash.currentTime);
  await page.waitForTimeout(20_000);
  const stats = await page.evaluate(() => window.__dash);
  await page.close();
  assert.deepEqual(stats.errors, [], `dash.js errors: ${stats.errors}`);
  assert.deepEqual(pageErrors, []);
  const played = stats.currentTime - start;
  assert.ok(played > 17, `played only ${played.toFixed(1)} s of 20 (stats ${JSON.stringify(stats)})`);
  assert.ok(stats.latency > 0 && stats.latency < 15, `live latency ${stats.latency} s`);
  console.log(`dash.js live latency ${stats.latency.toFixed(2)} s`);
});

test('dash.js plays a catch-up period from the archive', { timeout: 90_000 }, async () => {
  const from = Math.floor(Date.now() / 1000) - 25;
  const src = `${BASE}/meeting/index-${from}-20.mpd`;
  const mpd = await waitFor200(src);
  assert.match(mpd, /type="static"/);
  const { page, pageErrors } = await dashPage(src);
  await page.waitForFunction(() => window.__dash.currentTime > 1, null, { timeout: 30_000 });
  await page.waitForTimeout(8_000);
  const stats = await page.evaluate(() => window.__dash);
  await page.close();
  assert.deepEqual(stats.errors, [], `dash.js errors: ${stats.errors}`);
  assert.deepEqual(pageErrors, []);
  assert.ok(stats.currentTime > 8, `played only ${stats.currentTime.toFixed(1)} s (stats ${JSON.stringify(stats)})`);
});
