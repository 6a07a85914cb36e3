// The video.js golden check: video.js 8 (its bundled VHS, default settings) in headless
// Chromium plays a meeting a platform publishes over RTMP with ffmpeg — the source
// rung's media playlist and the ladder's master playlist the MC encodes from it — from a
// node on a host name of its own: frames decoded and the video clock advancing for 15 s,
// no fatal error. Every TS segment opens each picture with an access unit delimiter
// (ISO/IEC 13818-1 §2.14), which VHS's transmuxer needs to find the pictures.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchBrowser } from '../lib/cluster.mjs';
import { DEMO_LADDER, Proc, NodeProc, freePorts, nodeToml, masterOf, pollUntil } from '../lib/processes.mjs';
import { openPlayer, viewerState } from '../lib/players/site.mjs';

/** How long each playlist is watched after playback starts. */
const WATCH_MS = 15_000;
/** The rungs of the demo ladder (source, 240p, 144p). */
const RUNGS = 3;

let dir;
let mc;
let node;
let publisher;
let browser;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'brdyun-e2e-videojs-'));
  const [http, rtmp, nodeHttp, gossip] = await freePorts(4);
  const mcConfig = join(dir, 'mc.toml');
  writeFileSync(mcConfig, `[mc]
name = "mc"
trust_loopback = true
http = "127.0.0.1:${http}"
rtmp = "127.0.0.1:${rtmp}"
data_dir = ${JSON.stringify(join(dir, 'mc'))}
${DEMO_LADDER}`);
  mc = new Proc({ role: 'mc', name: 'mc', configPath: mcConfig, logPath: join(dir, 'mc.log') });
  await mc.start();
  const nodeConfig = join(dir, 'node-a.toml');
  writeFileSync(nodeConfig, nodeToml({
    name: 'node-a', http: nodeHttp, gossip, seeds: [], secret: 'brdyun e2e video.js, loopback only', mcPort: http,
    dataDir: join(dir, 'node-a'), announce: [`http://node-a.localhost:${nodeHttp}`],
  }));
  node = new NodeProc({ name: 'node-a', configPath: nodeConfig, logPath: join(dir, 'node-a.log'), http: nodeHttp, gossip });
  await node.start();
  // The platform creates and starts the meeting, then publishes it with its stream key.
  const api = (path, body) => fetch(`http://127.0.0.1:${http}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: body ? JSON.stringify(body) : undefined,
  }).then(async (r) => ({ status: r.status, json: await r.json().catch(() => null) }));
  const created = await api('/api/meetings', { id: 'meeting' });
  assert.equal(created.status, 201, JSON.stringify(created.json));
  assert.equal((await api('/api/meetings/meeting/start')).status, 200);
  publisher = spawn('ffmpeg', ['-nostdin', '-hide_banner', '-loglevel', 'error',
    '-re', '-f', 'lavfi', '-i', 'testsrc2=size=640x360:rate=25', '-re', '-f', 'lavfi', '-i', 'sine=frequency=440',
    '-c:v', 'libx264', '-preset', 'veryfast', '-g', '25', '-bf', '2', '-c:a', 'aac', '-t', '180',
    '-f', 'flv', `rtmp://127.0.0.1:${rtmp}/live/meeting?key=${created.json.stream_key}`], { stdio: ['ignore', 'ignore', 'inherit'] });
  // The node offers the whole ladder once the MC's encoder has cut a few segments of each rung.
  await pollUntil('node a offers the ladder', async () => {
    const m = await masterOf(node);
    if (!m || m.variants.length !== RUNGS) return false;
    const text = await fetch(`${node.base}/meeting/mono.m3u8`).then((r) => r.text()).catch(() => '');
    return (text.match(/#EXTINF/g) || []).length >= 3;
  }, { limitMs: 60_000 });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  publisher?.kill('SIGKILL');
  await node?.kill9();
  await mc?.kill9();
  if (dir && !process.env.E2E_KEEP) rmSync(dir, { recursive: true, force: true });
});

/** Plays `path` of node a (by its host name) with video.js and checks 15 s of playback. */
async function plays(label, path) {
  const page = await browser.newPage();
  try {
    const { media, pageErrors } = await openPlayer(page, 'videojs', `http://node-a.localhost:${node.http}${path}`, { playSeconds: 1 });
    const start = await viewerState(page);
    await page.waitForTimeout(WATCH_MS);
    const end = await viewerState(page);
    const advanced = end.currentTime - start.currentTime;
    console.log(`video.js ${label}: ${end.frames} frames decoded, the clock advanced ${advanced.toFixed(1)} s in ${WATCH_MS / 1000} s, `
      + `${media.length} segments, longest stall ${Math.round(end.longestStallMs)} ms, errors ${JSON.stringify(end.errors)}`);
    assert.equal(end.vhs, true, 'video.js plays through VHS, not the browser\'s own HLS');
    assert.deepEqual(end.fatalErrors, []);
    assert.deepEqual(pageErrors, []);
    assert.ok(end.frames > 0, 'frames decoded');
    assert.ok(end.frames > start.frames, 'frames decoded while watched');
    assert.ok(advanced >= WATCH_MS / 1000 - 3, `the video clock advanced ${advanced.toFixed(1)} s in ${WATCH_MS / 1000} s`);
    assert.ok(media.every((m) => m.host === `node-a.localhost:${node.http}`), 'segments from node a by its host name');
  } finally {
    await page.close();
  }
}

test('video.js defaults play the RTMP-published meeting\'s source rung (media playlist)', { timeout: 90_000 }, async () => {
  await plays('source rung', '/meeting/mono.m3u8');
});

test('video.js defaults play the ladder\'s master playlist', { timeout: 90_000 }, async () => {
  await plays('ladder master', '/meeting/index.m3u8');
});
