// An interpreter who drops out and returns, in real players: an MC feeds the built-in
// meeting (its floor a 440 Hz tone) to a node, and the meeting's Spanish comes from an
// interpreter's own feed, an ffmpeg publishing an 880 Hz tone over RTMP to
// `live/meeting@audio-spa` (docs/languages.md). A player picks Spanish and hears the
// interpreter; the interpreter's ffmpeg is then killed: the meeting must play on through
// the interpreter's absence (the picture never stands still, no fatal error), the
// absence is silence (never the floor: Spanish stays picked), and when the interpreter
// publishes again the player, without being asked, hears them once more. The catch-up
// MPD of the meeting from before the interpreter came plays the same way.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchBrowser, waitFor200 } from '../lib/cluster.mjs';
import { Proc, freePorts, startChild, startCluster } from '../lib/processes.mjs';
import { listen, hear } from '../lib/tone.mjs';
import { LANGUAGE_PLAYERS } from '../lib/players/languages.mjs';

/** How an MPD lists Spanish (its audio set, `lang="es"`). */
const SPANISH_SET = /<AdaptationSet id="200" contentType="audio"[^>]* lang="es">/;

const FLOOR_HZ = 440;
const INTERPRETER_HZ = 880;
const ADMIN_TOKEN = 'e2e-admin-token-loopback-only';
/** How long the interpreter stays away: several segments, so the absence is cut. */
const ABSENCE_MS = 10_000;
/** How long the player is watched once the interpreter is back: the absence reaches a
 * live player seconds later. */
const RETURN_MS = 16_000;
/** How long a player may take to switch language (it plays out some of its buffer). */
const SWITCH_MS = 3_000;
/** The longest the picture may stand still while the interpreter is away. */
const STALL_LIMIT_MS = 1_500;

let dir;
let mc;
let cluster;
let browser;
let rtmpUrl;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'brdyun-interpreter-'));
  const [http, rtmp] = await freePorts(2);
  const configPath = join(dir, 'mc.toml');
  writeFileSync(configPath, `[mc]
name = "mc"
trust_loopback = true
http = "127.0.0.1:${http}"
rtmp = "127.0.0.1:${rtmp}"
admin_token = ${JSON.stringify(ADMIN_TOKEN)}
data_dir = ${JSON.stringify(join(dir, 'mc'))}

[[meeting]]
id = "meeting"
title = "e2e interpreted meeting"
start = true
inputs = ["builtin://meeting"]

[[meeting.language]]
code = "eng"

[[meeting.language]]
code = "spa"
name = "Español"
interpreter = true
`);
  mc = new Proc({ role: 'mc', name: 'mc', configPath, logPath: join(dir, 'mc.log') });
  await mc.start();
  const meeting = await (await fetch(`http://127.0.0.1:${http}/api/meetings/meeting`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  })).json();
  const key = meeting.interpreter_keys && meeting.interpreter_keys.spa;
  assert.ok(key, `Spanish's interpreter key: ${JSON.stringify(meeting)}`);
  rtmpUrl = `rtmp://127.0.0.1:${rtmp}/live/meeting@audio-spa?key=${key}`;
  cluster = await startCluster({ names: ['a'], mcPort: http, dvr: true });
  // The node records the meeting from its first segment; the interpreter comes later.
  await waitFor200(`${cluster.nodes.a.base}/meeting/index.m3u8`);
  recordedFrom = Math.floor(Date.now() / 1000);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  interpreter?.kill('SIGKILL');
  await cluster?.stopAll();
  await mc?.kill9();
});

let interpreter;
let publishes = 0;
/** A second (Unix) the node had recorded the meeting by, before the interpreter came. */
let recordedFrom;

/** The interpreter publishes (an ffmpeg, 880 Hz, audio alone, in real time). */
function interpret() {
  publishes += 1;
  interpreter = startChild('ffmpeg', [
    '-nostdin', '-hide_banner', '-loglevel', 'error', '-re',
    '-f', 'lavfi', '-i', `sine=frequency=${INTERPRETER_HZ}:sample_rate=48000`,
    '-c:a', 'aac', '-b:a', '64k', '-t', '600', '-f', 'flv', rtmpUrl,
  ], join(dir, `interpreter-${publishes}.log`));
}

/** The interpreter goes away: its ffmpeg is killed, the RTMP connection drops. */
function leave() {
  interpreter.kill('SIGKILL');
  interpreter = null;
}

/** Waits until the node's `file` lists Spanish as `spanish` says (in an MPD, in its
 * last period: the one a live player starts in). */
async function waitListed(file, spanish) {
  const base = cluster.nodes.a.base;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const text = await waitFor200(`${base}/meeting/${file}`);
    const last = file.endsWith('.mpd') ? text.slice(text.lastIndexOf('<Period ')) : text;
    if (spanish.test(last)) return;
    assert.ok(Date.now() < deadline, `no Spanish in ${file}:\n${text}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** hls.js, as the node's player page ships it, exposing `window.__p` as
 * `LANGUAGE_PLAYERS` do. */
const HLS_JS = {
  script: (base) => ({ url: `${base}/player/hls.min.js` }),
  start: (src) => {
    const video = document.getElementById('v');
    const hls = new Hls({ lowLatencyMode: false });
    const state = { fatal: [] };
    hls.on(Hls.Events.ERROR, (_, d) => { if (d.fatal) state.fatal.push(`${d.type}/${d.details}`); });
    const tracks = () => hls.audioTracks.map((t) => ({ lang: t.lang, label: t.name, role: null }));
    window.__p = {
      state,
      lang: () => (hls.audioTrack >= 0 && hls.audioTracks[hls.audioTrack] ? hls.audioTracks[hls.audioTrack].lang : null),
      tracks,
      pick: (lang) => { hls.audioTrack = tracks().findIndex((t) => t.lang === lang); },
    };
    hls.loadSource(src);
    hls.attachMedia(video);
    video.play().catch(() => {});
  },
};

/** The players, each started in a page with `start(src)`, which sets `window.__p`,
 * with the manifest each plays and how that lists Spanish. */
const PLAYERS = {
  'hls.js': { ...HLS_JS, manifest: 'index.m3u8', spanish: /URI="audio-spa\/mono.m3u8"/ },
  'hls.js (fMP4)': { ...HLS_JS, manifest: 'fmp4-index.m3u8', spanish: /URI="audio-spa\/fmp4-a.m3u8"/ },
  'dash.js': { ...LANGUAGE_PLAYERS['dash.js'], script: () => ({ path: LANGUAGE_PLAYERS['dash.js'].script }), manifest: 'index.mpd', spanish: SPANISH_SET },
  Shaka: { ...LANGUAGE_PLAYERS.Shaka, script: () => ({ path: LANGUAGE_PLAYERS.Shaka.script }), manifest: 'index.mpd', spanish: SPANISH_SET },
};

/** Watches `page` for `ms`: the longest the picture stood still, the tones heard (Hz,
 * rounded, with how many 200-ms samples each), and how far the picture advanced. */
async function watch(page, ms) {
  const started = Date.now();
  const first = await page.evaluate(() => window.__tone());
  let last = first;
  let lastMove = Date.now();
  let longestStill = 0;
  const heard = {};
  while (Date.now() - started < ms) {
    await page.waitForTimeout(200);
    const now = await page.evaluate(() => window.__tone());
    if (now.time > last.time) lastMove = Date.now();
    longestStill = Math.max(longestStill, Date.now() - lastMove);
    const hz = now.db > -80 ? Math.round(now.hz / 20) * 20 : 'silence';
    heard[hz] = (heard[hz] ?? 0) + 1;
    last = now;
  }
  return { longestStill, heard, advanced: last.time - first.time };
}

for (const [name, player] of Object.entries(PLAYERS)) test(`${name} plays an interpreted meeting through the interpreter's absence and hears the interpreter again when they return`, { timeout: 150_000 }, async () => {
  interpret();
  try {
    await waitListed(player.manifest, player.spanish);
    const page = await browser.newPage();
    const pageErrors = [];
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    await page.setContent('<video id="v" autoplay playsinline></video>');
    await page.addScriptTag(player.script(cluster.nodes.a.base));
    await page.evaluate(player.start, `${cluster.nodes.a.base}/meeting/${player.manifest}`);
    await listen(page, '#v');
    await page.waitForFunction(() => document.getElementById('v').currentTime > 2, null, { timeout: 40_000 });
    // A live DASH player may start in a period from before the interpreter came back.
    await page.waitForFunction(() => window.__p.tracks().some((t) => t.lang === 'es'), null, { timeout: 20_000 });
    assert.deepEqual((await page.evaluate(() => window.__p.tracks().map((t) => t.lang))).sort(), ['en', 'es']);
    await hear(page, FLOOR_HZ, `${name}: the floor at the start`);
    await page.evaluate(() => window.__p.pick('es'));
    await hear(page, INTERPRETER_HZ, `${name}: the interpreter, once picked`);

    // The interpreter is away, then back; the player is watched all along, until the
    // absence has played out (a live player is seconds behind the feed).
    leave();
    const away = await watch(page, ABSENCE_MS);
    interpret();
    const after = await watch(page, RETURN_MS);
    const back = await hear(page, INTERPRETER_HZ, `${name}: the interpreter, back`);
    const state = await page.evaluate(() => window.__p.state);
    const lang = await page.evaluate(() => window.__p.lang());
    await page.close();
    const heard = { ...away.heard };
    for (const [hz, n] of Object.entries(after.heard)) heard[hz] = (heard[hz] ?? 0) + n;
    const longestStill = Math.max(away.longestStill, after.longestStill);
    const advanced = away.advanced + after.advanced;
    const watched = (ABSENCE_MS + RETURN_MS) / 1000;
    console.log(`${name} on ${player.manifest}: the interpreter away ${ABSENCE_MS} ms and back, watched ${watched} s: `
      + `the picture advanced ${advanced.toFixed(1)} s, stood still at most ${longestStill} ms, heard ${JSON.stringify(heard)} `
      + `(200-ms samples); the interpreter heard again ${back} ms later; language ${lang}`);
    assert.deepEqual(state.fatal, []);
    assert.deepEqual(pageErrors, []);
    assert.ok(longestStill <= STALL_LIMIT_MS, `${name} stood still ${longestStill} ms across the interpreter's absence`);
    assert.ok(advanced >= watched * 0.8, `${name} advanced ${advanced} s in ${watched} s`);
    assert.ok((heard.silence ?? 0) >= 10, `${name} never played the absence as silence: ${JSON.stringify(heard)}`);
    assert.equal(heard[FLOOR_HZ], undefined, `${name} played the floor: ${JSON.stringify(heard)}`);
    assert.equal(lang, 'es', `${name} kept Spanish`);
  } finally {
    if (interpreter) leave();
  }
});

// The catch-up MPD of the meeting from before the interpreter came: Spanish starts late
// in its Period, and is silence where the interpreter was away. A viewer who picks
// Spanish at the start plays on and hears the interpreter once the recording reaches
// them.
for (const name of ['dash.js', 'Shaka']) test(`${name} plays the catch-up MPD with Spanish picked before the interpreter came, through their absences`, { timeout: 150_000 }, async () => {
  const player = PLAYERS[name];
  const base = cluster.nodes.a.base;
  const duration = Math.floor(Date.now() / 1000) - recordedFrom;
  const file = `index-${recordedFrom}-${duration}.mpd`;
  const answer = await fetch(`${base}/meeting/${file}`);
  const mpd = await answer.text();
  assert.equal(answer.status, 200, `${file}: ${mpd.slice(0, 500)}`);
  assert.match(mpd, /lang="es"/, mpd);
  const page = await browser.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.setContent('<video id="v" autoplay playsinline></video>');
  await page.addScriptTag(player.script(base));
  await page.evaluate(player.start, `${base}/meeting/${file}`);
  await listen(page, '#v');
  await page.waitForFunction(() => document.getElementById('v').currentTime > 0.5, null, { timeout: 40_000 });
  await page.evaluate(() => window.__p.pick('es'));
  // What the player had buffered of the floor plays out first.
  await page.waitForTimeout(SWITCH_MS);
  const started = Date.now();
  const played = await watch(page, 20_000);
  const heardAt = Date.now() - started;
  const state = await page.evaluate(() => window.__p.state);
  const lang = await page.evaluate(() => window.__p.lang());
  await page.close();
  console.log(`${name} on ${file}: with Spanish picked at the start, from ${SWITCH_MS} ms on the picture advanced ${played.advanced.toFixed(1)} s `
    + `in ${heardAt} ms, stood still at most ${played.longestStill} ms, heard ${JSON.stringify(played.heard)}; language ${lang}`);
  assert.deepEqual(state.fatal, []);
  assert.deepEqual(pageErrors, []);
  assert.ok(played.longestStill <= STALL_LIMIT_MS, `${name} stood still ${played.longestStill} ms`);
  assert.ok((played.heard[INTERPRETER_HZ] ?? 0) >= 5, `${name} never heard the interpreter: ${JSON.stringify(played.heard)}`);
  assert.equal(played.heard[FLOOR_HZ], undefined, `${name} played the floor: ${JSON.stringify(played.heard)}`);
  assert.equal(lang, 'es');
});
