// A closed meeting's recording plays start to end in hls.js, from a node that never ran
// the meeting: node a records the MC's meeting into the recordings store (a directory
// behind the object-store interface, as the demo's); the meeting closes; node b starts
// afterwards and serves `recording.m3u8` from the store alone; hls.js in headless
// Chromium plays it to its end with no error.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchBrowser } from '../lib/cluster.mjs';
import { Proc, freePorts, pollUntil } from '../lib/processes.mjs';

let dir;
const procs = [];
let mcBase;
let browser;

const store = () => `file://${join(dir, 'store')}`;

/** Starts `role` `name` with `config` written into the test's directory. */
async function start(role, name, config) {
  const configPath = join(dir, `${name}.toml`);
  writeFileSync(configPath, config);
  const proc = new Proc({ role, name, configPath, logPath: join(dir, `${name}.log`) });
  procs.push(proc);
  await proc.start();
  return proc;
}

/** A node following the MC, recording into the shared store. */
function nodeConfig(name, http, mcHttp) {
  return `[node]
name = "${name}"
trust_loopback = true
http = "127.0.0.1:${http}"
data_dir = ${JSON.stringify(join(dir, name))}

[mc]
url = "http://127.0.0.1:${mcHttp}"
poll_interval = 0.5
timeout = 2

[defaults]
segment_duration = 1.0
window = 4

[defaults.dvr]
enabled = true
depth = "1h"
file_span = "4s"

[recordings]
store = ${JSON.stringify(store())}
`;
}

let bBase;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'brdyun-recorded-'));
  const [mcHttp, aHttp, bHttp] = await freePorts(3);
  mcBase = `http://127.0.0.1:${mcHttp}`;
  await start('mc', 'mc', `[mc]
name = "mc"
trust_loopback = true
http = "127.0.0.1:${mcHttp}"
data_dir = ${JSON.stringify(join(dir, 'mc'))}

[[meeting]]
id = "town"
title = "recorded meeting"
start = true
inputs = ["builtin://meeting"]

[recordings]
store = ${JSON.stringify(store())}
`);
  const aBase = `http://127.0.0.1:${aHttp}`;
  await start('node', 'a', nodeConfig('a', aHttp, mcHttp));
  await pollUntil('node a records 16 s of town', async () => {
    const res = await fetch(`${aBase}/api/streams/town`);
    if (res.status !== 200) return false;
    return ((await res.json()).dvr?.counters?.recorded ?? 0) >= 16;
  }, { limitMs: 60_000, everyMs: 1_000 });
  // The meeting closes (the MC trusts loopback as its admin); node a uploads its last files.
  const closed = await fetch(`${mcBase}/api/meetings/town/close`, { method: 'POST' });
  assert.equal(closed.status, 200, await closed.text());
  await pollUntil('node a stops town and its uploads are done', async () => {
    const live = await (await fetch(`${aBase}/town/index.m3u8`)).json().catch(() => ({}));
    const rec = (await (await fetch(`${aBase}/api/node`)).json()).recordings;
    return live.code === 103003 && rec?.archives === 0 && rec?.queued?.files === 0;
  }, { limitMs: 40_000, everyMs: 1_000 });
  bBase = `http://127.0.0.1:${bHttp}`;
  await start('node', 'b', nodeConfig('b', bHttp, mcHttp));
  await pollUntil('node b serves the recording', async () => (await fetch(`${bBase}/town/recording.m3u8`)).status === 200, { limitMs: 30_000, everyMs: 500 });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  for (const proc of procs) await proc.kill9();
  if (dir && !process.env.E2E_KEEP) rmSync(dir, { recursive: true, force: true });
});

test('hls.js plays a closed meeting\'s recording start to end from a node that never ran it', { timeout: 120_000 }, async () => {
  const media = await (await fetch(`${bBase}/town/mono-recording.m3u8`)).text();
  assert.match(media, /#EXT-X-ENDLIST/);
  const listed = [...media.matchAll(/#EXTINF:([\d.]+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
  const page = await browser.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  try {
    await page.setContent('<video id="v" muted autoplay playsinline></video>');
    await page.addScriptTag({ url: `${bBase}/player/hls.min.js` });
    await page.evaluate((src) => {
      const stats = { errors: [], currentTime: 0, ended: false, duration: 0 };
      window.__play = stats;
      const video = document.getElementById('v');
      const hls = new Hls();
      hls.on(Hls.Events.ERROR, (_, d) => { if (d.fatal) stats.errors.push(`${d.type} ${d.details}`); });
      video.addEventListener('timeupdate', () => { stats.currentTime = video.currentTime; stats.duration = video.duration; });
      video.addEventListener('ended', () => { stats.ended = true; });
      hls.loadSource(src);
      hls.attachMedia(video);
    }, `${bBase}/town/recording.m3u8`);
    await page.waitForFunction(() => window.__play.ended || window.__play.errors.length > 0, null, { timeout: 90_000 });
    const stats = await page.evaluate(() => window.__play);
    console.log(`hls.js played the closed meeting's recording to ${stats.currentTime.toFixed(1)} s of ${listed.toFixed(1)} s listed`);
    assert.deepEqual(stats.errors, [], `hls.js errors: ${stats.errors}`);
    assert.deepEqual(pageErrors, []);
    assert.ok(stats.ended, 'it reached the end');
    assert.ok(stats.currentTime >= listed - 2, `played ${stats.currentTime.toFixed(1)} s of ${listed.toFixed(1)} s`);
  } finally {
    await page.close();
  }
});
