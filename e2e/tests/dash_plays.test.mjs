// DASH plays in a real browser: dash.js in headless Chromium watches the demo
// meeting's live MPD on node b (which pulls the meeting) for 20 s with no error — the
// demo's ABR ladder as one video AdaptationSet of three Representations,
// joined while a player plays, switched to the lowest rung and back — then a catch-up
// period as a static MPD derived from the TS archive.
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

/** Resolves once the live MPD's newest period offers the whole ladder. */
async function ladderInMpd() {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const mpd = await waitFor200(`${BASE}/meeting/index.mpd`);
    const newest = mpd.split('<Period ').pop();
    if ((newest.match(/<Representation id="(v|240p|144p)"/g) || []).length === 3) return;
    if (Date.now() > deadline) throw new Error(`the ladder is not in the MPD: ${mpd}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

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

// First, while the demo starts: the MC's encoder cuts the rungs' first segments a few
// seconds after the source's, so this player starts on the source alone and the rungs
// join while it plays (in a new period: a live period's Representations never change).
test('dash.js started before the rungs join plays on when they do', { timeout: 120_000 }, async () => {
  const first = await waitFor200(`${BASE}/meeting/index.mpd`);
  const { page, pageErrors } = await dashPage(`${BASE}/meeting/index.mpd`);
  await page.waitForFunction(() => window.__dash.currentTime > 1, null, { timeout: 40_000 });
  const start = await page.evaluate(() => window.__dash.currentTime);
  await page.waitForTimeout(30_000);
  const stats = await page.evaluate(() => ({ ...window.__dash, representations: window.__player.getRepresentationsByType('video').length }));
  await page.close();
  const played = stats.currentTime - start;
  console.log(`dash.js across the rungs' join: played ${played.toFixed(1)} s of 30, `
    + `${stats.representations} video Representations at the end, first MPD had ${(first.match(/<Representation id="(240p|144p)"/g) || []).length} rung(s)`);
  assert.deepEqual(stats.errors, [], `dash.js errors: ${stats.errors}`);
  assert.deepEqual(pageErrors, []);
  assert.equal(stats.representations, 3, 'the rungs joined');
  // The join is a period transition, which dash.js crosses with a stall of a second
  // or a few (docs/ladder.md); before periods were split it froze for good.
  assert.ok(played > 20, `played only ${played.toFixed(1)} s of 30 (stats ${JSON.stringify(stats)})`);
});

test('dash.js plays the live MPD for 20 s', { timeout: 90_000 }, async () => {
  await ladderInMpd();
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

test('dash.js switches between the Representations of the ladder', { timeout: 120_000 }, async () => {
  await ladderInMpd();
  const { page, pageErrors } = await dashPage(`${BASE}/meeting/index.mpd`);
  await page.waitForFunction(() => window.__dash.currentTime > 3, null, { timeout: 40_000 });
  const heights = await page.evaluate(() => window.__player.getRepresentationsByType('video').map((r) => r.height).sort((a, b) => a - b));
  assert.deepEqual(heights, [144, 240, 360], 'one video Representation per rung');
  // The decoded picture's height is what the viewer sees: switch to 144p, then 360p.
  for (const height of [144, 360]) {
    await page.evaluate((h) => {
      const player = window.__player;
      player.updateSettings({ streaming: { abr: { autoSwitchBitrate: { video: false } } } });
      const rep = player.getRepresentationsByType('video').find((r) => r.height === h);
      player.setRepresentationForTypeById('video', rep.id, false);
    }, height);
    try {
      await page.waitForFunction((h) => document.getElementById('v').videoHeight === h, height, { timeout: 30_000 });
    } catch (e) {
      const stats = await page.evaluate(() => ({ ...window.__dash, videoHeight: document.getElementById('v').videoHeight }));
      throw new Error(`dash.js did not show ${height}p: ${e.message} (${JSON.stringify(stats)})`);
    }
  }
  const before = await page.evaluate(() => window.__dash.currentTime);
  await page.waitForTimeout(4_000);
  const stats = await page.evaluate(() => window.__dash);
  await page.close();
  assert.deepEqual(stats.errors, [], `dash.js errors: ${stats.errors}`);
  assert.deepEqual(pageErrors, []);
  assert.ok(stats.currentTime - before > 3, 'still playing after the switches');
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
