// Audio languages in a real player: a node ingests the built-in meeting, whose source
// carries two audio languages (the floor, a 440 Hz tone tagged eng, and an
// interpretation, a 750 Hz tone tagged spa), and offers them as one HLS audio group.
// hls.js (the build the player page ships) in headless Chromium plays the master,
// lists both languages, and switches from the floor to Spanish and back mid-play; the
// decoded audio is read with the Web Audio API (an AnalyserNode on the <video>) and
// must be each language's own tone. hls.js drops its buffered audio on a switch, so the
// video may wait for the new language's first segment: the wait is measured and
// bounded (a second at most). hls.js plays the fMP4 HLS master too, whose variants are
// the video alone and whose every language, the floor too, is an audio rendition.
// dash.js and Shaka play the MPD, where each language is an audio adaptation set of its
// own (lang, Label, Role), and Shaka both HLS masters; each switches the same way.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchBrowser, waitFor200 } from '../lib/cluster.mjs';
import { Proc, freePorts } from '../lib/processes.mjs';
import { listen, hear as hearOn } from '../lib/tone.mjs';
import { LANGUAGE_PLAYERS } from '../lib/players/languages.mjs';


const FLOOR_HZ = 440;
const SPANISH_HZ = 750;

let dir;
let node;
let base;
let browser;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'brdyun-languages-'));
  const [http] = await freePorts(1);
  const configPath = join(dir, 'languages.toml');
  writeFileSync(configPath, `[node]
name = "languages"
http = "127.0.0.1:${http}"
data_dir = ${JSON.stringify(join(dir, 'data'))}

[[stream]]
name = "meeting"
inputs = ["builtin://meeting"]

[[stream.language]]
code = "eng"

[[stream.language]]
code = "spa"
name = "Español"
`);
  node = new Proc({ role: 'node', name: 'languages', configPath, logPath: join(dir, 'languages.log') });
  await node.start();
  base = `http://127.0.0.1:${http}`;
  // The master lists Spanish once its rendition has a segment; a player starts three
  // target durations behind the live edge, so the switches wait until Spanish covers
  // where a player starts (switching to a language with nothing at the playhead stalls
  // hls.js until it jumps to the language's first segment).
  const deadline = Date.now() + 40_000;
  for (;;) {
    const master = await waitFor200(`${base}/meeting/index.m3u8`);
    const spanish = master.includes('URI="audio-spa/mono.m3u8"')
      ? await waitFor200(`${base}/meeting/audio-spa/mono.m3u8`) : '';
    if ((spanish.match(/^#EXTINF:/gm) ?? []).length >= 5) break;
    assert.ok(Date.now() < deadline, `Spanish has not 5 segments:\n${master}\n${spanish}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await node?.kill9();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

for (const master of ['index.m3u8', 'fmp4-index.m3u8']) test(`hls.js switches between the floor and the interpretation mid-play (${master}) and hears each tone`, { timeout: 120_000 }, async () => {
  const page = await browser.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  // Not muted: the element's audio goes to the analyser only (never to the speakers).
  await page.setContent('<video id="v" autoplay playsinline></video>');
  await page.addScriptTag({ url: `${base}/player/hls.min.js` });
  await page.evaluate((src) => {
    const video = document.getElementById('v');
    const hls = new window.Hls();
    const state = { fatal: [], waits: [], switched: [] };
    window.__lang = { hls, state };
    hls.on(window.Hls.Events.ERROR, (_, d) => { if (d.fatal) state.fatal.push(`${d.type}/${d.details}`); });
    hls.on(window.Hls.Events.AUDIO_TRACK_SWITCHED, (_, d) => state.switched.push(d.id));
    // Each wait: when it began (wall clock, ms) and how long it lasted.
    video.addEventListener('waiting', () => state.waits.push({ at: Date.now(), ms: null }));
    video.addEventListener('playing', () => {
      const open = state.waits.find((w) => w.ms === null);
      if (open) open.ms = Date.now() - open.at;
    });
    hls.loadSource(src);
    hls.attachMedia(video);
    video.play().catch(() => {});
  }, `${base}/meeting/${master}`);
  await listen(page, '#v');
  await page.waitForFunction(() => document.getElementById('v').currentTime > 2, null, { timeout: 40_000 });

  const tracks = await page.evaluate(() => window.__lang.hls.audioTracks.map((t) => ({ name: t.name, lang: t.lang })));
  assert.deepEqual(tracks, [{ name: 'English', lang: 'en' }, { name: 'Español', lang: 'es' }]);

  const hear = (hz, what) => hearOn(page, hz, what);

  await hear(FLOOR_HZ, 'the floor at the start');
  const waitsBefore = await page.evaluate(() => window.__lang.state.waits.length);
  const spanishIndex = tracks.findIndex((t) => t.lang === 'es');
  await page.evaluate((i) => { window.__lang.hls.audioTrack = i; }, spanishIndex);
  const toSpanish = await hear(SPANISH_HZ, 'after switching to Spanish');
  await page.waitForTimeout(4_000);
  await hear(SPANISH_HZ, 'Spanish four seconds on');
  await page.evaluate(() => { window.__lang.hls.audioTrack = 0; });
  const toFloor = await hear(FLOOR_HZ, 'after switching back to the floor');
  const state = await page.evaluate(() => window.__lang.state);
  const time = await page.evaluate(() => document.getElementById('v').currentTime);
  await page.close();
  const waits = state.waits.slice(waitsBefore).map((w) => w.ms);
  console.log(`${master}: language switch heard after: to Spanish ${toSpanish} ms, back to the floor ${toFloor} ms; video waits on the switches: ${JSON.stringify(waits)} ms; playing at ${time.toFixed(1)} s`);
  assert.deepEqual(state.fatal, []);
  assert.deepEqual(pageErrors, []);
  assert.deepEqual(state.switched.slice(-2), [spanishIndex, 0]);
  assert.ok(waits.length <= 2, `the video waited ${waits.length} times for two switches`);
  for (const ms of waits) assert.ok(ms !== null && ms <= 1000, `a switch stalled the video ${ms} ms`);
});

/**
 * The manifests the players above switch languages in, and how each lists Spanish. The
 * MPD lists Spanish in the periods from its first segment on; the fMP4 HLS master
 * lists every language, the floor too, as an audio rendition of its own beside
 * video-only variants; the TS master has the floor muxed in its variants (hls.js plays
 * both masters in the test above).
 */
const SWITCHES = [
  ['dash.js', 'index.mpd', /<AdaptationSet id="200" contentType="audio"[^>]* lang="es">/],
  ['Shaka', 'index.mpd', /<AdaptationSet id="200" contentType="audio"[^>]* lang="es">/],
  ['Shaka', 'fmp4-index.m3u8', /URI="audio-spa\/fmp4-a.m3u8"/],
  ['Shaka', 'index.m3u8', /URI="audio-spa\/mono.m3u8"/],
];

for (const [name, manifest, spanish] of SWITCHES) test(`${name} lists the languages of ${manifest} and switches between the floor and the interpretation mid-play, hearing each tone`, { timeout: 120_000 }, async () => {
  const dashPlayer = LANGUAGE_PLAYERS[name];
  const deadline = Date.now() + 20_000;
  for (;;) {
    const text = await waitFor200(`${base}/meeting/${manifest}`);
    if (spanish.test(text)) break;
    assert.ok(Date.now() < deadline, `no Spanish in ${manifest}:\n${text}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  const page = await browser.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.setContent('<video id="v" autoplay playsinline></video>');
  await page.addScriptTag({ path: dashPlayer.script });
  await page.evaluate(dashPlayer.start, `${base}/meeting/${manifest}`);
  await listen(page, '#v');
  await page.waitForFunction(() => document.getElementById('v').currentTime > 2, null, { timeout: 40_000 });

  const tracks = await page.evaluate(() => window.__p.tracks());
  const langs = tracks.map((t) => t.lang).sort();
  assert.deepEqual(langs, ['en', 'es'], `the audio languages: ${JSON.stringify(tracks)}`);

  const hear = (hz, what) => hearOn(page, hz, what);
  await hear(FLOOR_HZ, `${name}: the floor at the start`);
  await page.evaluate(() => window.__p.pick('es'));
  const toSpanish = await hear(SPANISH_HZ, `${name}: after switching to Spanish`);
  await page.waitForTimeout(4_000);
  await hear(SPANISH_HZ, `${name}: Spanish four seconds on`);
  await page.evaluate(() => window.__p.pick('en'));
  const toFloor = await hear(FLOOR_HZ, `${name}: after switching back to the floor`);
  const state = await page.evaluate(() => window.__p.state);
  const time = await page.evaluate(() => document.getElementById('v').currentTime);
  await page.close();
  console.log(`${manifest}, ${name}: languages ${JSON.stringify(tracks)}; switch heard after: to Spanish ${toSpanish} ms, `
    + `back to the floor ${toFloor} ms; playing at ${time.toFixed(1)} s`);
  assert.deepEqual(state.fatal, []);
  assert.deepEqual(pageErrors, []);
});
