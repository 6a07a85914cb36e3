// A recorded period that only the recordings store holds plays in real players: an
// origin node records the built-in meeting (4-s archive files, a 4-s live window) and
// copies every closed file to the store — a directory behind the object-store
// interface, as the demo's — then a node that joins afterwards, with none of the period
// on its disk, serves the period's catch-up playlist and MPD from the store, and hls.js
// and dash.js in headless Chromium play it with no error.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchBrowser, waitFor200 } from '../lib/cluster.mjs';
import { Proc, freePorts, pollUntil } from '../lib/processes.mjs';

const DASH_JS = fileURLToPath(new URL('../node_modules/dashjs/dist/modern/umd/dash.all.min.js', import.meta.url));

let dir;
const nodes = [];
let joined;
let browser;
let from;

/** Starts a node named `name` on `http` recording stream `meeting` from `input` into the shared store. */
async function startNode(name, http, input) {
  const configPath = join(dir, `${name}.toml`);
  writeFileSync(configPath, `[node]
name = "${name}"
trust_loopback = true
http = "127.0.0.1:${http}"
data_dir = ${JSON.stringify(join(dir, name))}

[defaults]
segment_duration = 1.0
window = 4

[defaults.dvr]
enabled = true
depth = "1h"
file_span = "4s"

[recordings]
store = ${JSON.stringify(`file://${join(dir, 'store')}`)}

[[stream]]
name = "meeting"
inputs = [${JSON.stringify(input)}]
`);
  const node = new Proc({ role: 'node', name, configPath, logPath: join(dir, `${name}.log`) });
  nodes.push(node);
  await node.start();
  const base = `http://127.0.0.1:${http}`;
  await waitFor200(`${base}/meeting/mono.m3u8`);
  return base;
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'brdyun-recordings-'));
  const [originHttp, joinedHttp] = await freePorts(2);
  const origin = await startNode('origin', originHttp, 'builtin://meeting');
  from = Math.floor(Date.now() / 1000) + 2;
  // 30 s recorded, the period's files closed and copied to the store.
  await new Promise((r) => setTimeout(r, 32_000));
  joined = await startNode('joined', joinedHttp, `${origin}/meeting/mpegts`);
  await pollUntil('the joined node to serve the period from the store', async () => {
    const res = await fetch(`${joined}/meeting/mono-${from}-20.m3u8`);
    if (res.status !== 200) return false;
    const segments = (await res.text()).match(/^dvr-\d+\.ts$/gm) || [];
    const status = await (await fetch(`${joined}/api/streams/meeting`)).json();
    const localFrom = status.dvr?.local?.ts?.from_ms ?? 0;
    return segments.length >= 18 && localFrom > (from + 20) * 1000;
  }, { limitMs: 40_000, everyMs: 1_000 });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  for (const node of nodes) await node.kill9();
  if (dir && !process.env.E2E_KEEP) rmSync(dir, { recursive: true, force: true });
});

/** Plays `setup`'s player on a blank page for `seconds`; returns `window.__play`. */
async function play(setup, src, scriptPath, scriptUrl, seconds = 10) {
  const page = await browser.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.setContent('<video id="v" muted autoplay playsinline></video>');
  await page.addScriptTag(scriptPath ? { path: scriptPath } : { url: scriptUrl });
  await page.evaluate(setup, src);
  await page.waitForFunction(() => window.__play.currentTime > 1, null, { timeout: 30_000 });
  await page.waitForTimeout(seconds * 1000);
  const stats = await page.evaluate(() => window.__play);
  await page.close();
  return { stats, pageErrors };
}

test('hls.js plays a catch-up period only the store holds', { timeout: 90_000 }, async () => {
  const { stats, pageErrors } = await play((src) => {
    const stats = { errors: [], currentTime: 0 };
    window.__play = stats;
    const video = document.getElementById('v');
    const hls = new Hls();
    hls.on(Hls.Events.ERROR, (_, d) => { if (d.fatal) stats.errors.push(`${d.type} ${d.details}`); });
    video.addEventListener('timeupdate', () => { stats.currentTime = video.currentTime; });
    hls.loadSource(src);
    hls.attachMedia(video);
  }, `${joined}/meeting/mono-${from}-20.m3u8`, null, `${joined}/player/hls.min.js`);
  assert.deepEqual(stats.errors, [], `hls.js errors: ${stats.errors}`);
  assert.deepEqual(pageErrors, []);
  assert.ok(stats.currentTime > 9, `played only ${stats.currentTime.toFixed(1)} s`);
});

test('dash.js plays the same period as a static MPD', { timeout: 90_000 }, async () => {
  const { stats, pageErrors } = await play((src) => {
    const stats = { errors: [], currentTime: 0 };
    window.__play = stats;
    const video = document.getElementById('v');
    const player = dashjs.MediaPlayer().create();
    player.updateSettings({ debug: { logLevel: dashjs.Debug.LOG_LEVEL_WARNING } });
    player.on(dashjs.MediaPlayer.events.ERROR, (e) => stats.errors.push(JSON.stringify(e.error || e)));
    video.addEventListener('timeupdate', () => { stats.currentTime = video.currentTime; });
    player.initialize(video, src, true);
  }, `${joined}/meeting/index-${from}-20.mpd`, DASH_JS, null);
  assert.deepEqual(stats.errors, [], `dash.js errors: ${stats.errors}`);
  assert.deepEqual(pageErrors, []);
  assert.ok(stats.currentTime > 9, `played only ${stats.currentTime.toFixed(1)} s`);
});
