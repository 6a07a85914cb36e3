// Live captions in real players. The demo meeting carries CEA-608 in its
// video and gets cues from the MC's caption API (its built-in captioner, and this
// test's own). hls.js (the build the player page ships, default settings) on node b:
// each cue posted to the MC reaches the <video>'s English text track within 100 ms of
// the media time the API said it was stamped for; the 608 captions hls.js renders
// itself from the video line up with brdyun's decoded WebVTT track. dash.js on the
// live MPD: the text adaptation sets are offered and a cue reaches the text track.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startDemo, waitFor200, launchBrowser } from '../lib/cluster.mjs';

const PORT = Number(process.env.E2E_PORT || 18080) + 600;
const NODE = `http://127.0.0.1:${PORT + 1}`;
const MC = `http://127.0.0.1:${PORT + 3}`;
const DASH_JS = fileURLToPath(new URL('../node_modules/dashjs/dist/modern/umd/dash.all.min.js', import.meta.url));
let demo;
let browser;

before(async () => {
  demo = await startDemo(PORT);
  await waitFor200(`${NODE}/meeting/sub-en.m3u8`, 60_000);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await demo?.stop();
});

/** Posts one cue to the MC's caption API; returns the API's answer for it. */
async function postCue(text, durationMs = 1500) {
  const res = await fetch(`${MC}/api/meetings/meeting/captions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ language: 'en', name: 'English', cues: [{ text, duration_ms: durationMs }] }),
  });
  const body = await res.json();
  assert.equal(res.status, 201, JSON.stringify(body));
  return body.cues[0];
}

/** A blank page with a muted video and hls.js (default settings) playing `src`; the
 * text tracks' cues and the PDT-to-media-time offset are read from `window.__cc()`. */
async function hlsPage(src) {
  const page = await browser.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.setContent('<video id="v" muted autoplay playsinline></video>');
  await page.addScriptTag({ url: `${NODE}/player/hls.min.js` });
  await page.evaluate((url) => {
    const video = document.getElementById('v');
    const hls = new Hls();
    window.__fatal = [];
    hls.on(Hls.Events.ERROR, (_, d) => { if (d.fatal) window.__fatal.push(d.details); });
    hls.loadSource(url);
    hls.attachMedia(video);
    window.__hls = hls;
    window.__cc = () => {
      const tracks = [];
      for (const track of video.textTracks) {
        if (track.mode === 'disabled') track.mode = 'hidden';
        const cues = [];
        for (const cue of track.cues || []) cues.push({ text: cue.text, start: cue.startTime, end: cue.endTime });
        tracks.push({ kind: track.kind, label: track.label, language: track.language, cues });
      }
      const date = hls.playingDate;
      return {
        tracks,
        currentTime: video.currentTime,
        // PROGRAM-DATE-TIME minus media time, seconds: the same for every moment of a timeline.
        offset: date ? date.getTime() / 1000 - video.currentTime : null,
        fatal: window.__fatal,
      };
    };
  }, src);
  return { page, pageErrors };
}

test('hls.js shows each posted cue within 100 ms of the media time it was stamped for', { timeout: 120_000 }, async () => {
  const { page, pageErrors } = await hlsPage(`${NODE}/meeting/index.m3u8`);
  await page.waitForFunction(() => window.__cc().currentTime > 1, null, { timeout: 40_000 });
  // The default track is the first one the MC saw (English or its translation): pick English.
  await page.evaluate(() => {
    window.__hls.subtitleTrack = window.__hls.subtitleTracks.findIndex((t) => t.name === 'English');
  });
  const posted = [];
  for (let i = 0; i < 5; i += 1) {
    const text = `e2e cue ${i} ${Date.now()}`;
    posted.push({ text, ...(await postCue(text)) });
    await page.waitForTimeout(1_700);
  }
  // The subtitle segments of the last cue are listed a segment later, and loaded on.
  await page.waitForTimeout(8_000);
  const state = await page.evaluate(() => window.__cc());
  await page.close();
  assert.deepEqual(state.fatal, []);
  assert.deepEqual(pageErrors, []);
  assert.ok(state.offset !== null, 'hls.js knows the playing date');
  const english = state.tracks.find((t) => t.kind === 'subtitles' && t.label === 'English');
  assert.ok(english, `no English subtitle track: ${JSON.stringify(state.tracks.map((t) => [t.kind, t.label]))}`);
  const errors = [];
  for (const cue of posted) {
    const prefix = cue.text;
    const shown = english.cues.filter((c) => c.text === prefix);
    assert.ok(shown.length > 0, `cue "${prefix}" never reached the text track: ${JSON.stringify(english.cues.slice(-8))}`);
    const start = Math.min(...shown.map((c) => c.start));
    const expected = cue.start_ms / 1000 - state.offset;
    errors.push(Math.abs(start - expected));
  }
  console.log(`caption placement error at hls.js, ms: ${errors.map((e) => (e * 1000).toFixed(1)).join(', ')}`);
  for (const e of errors) assert.ok(e < 0.1, `a cue is ${(e * 1000).toFixed(0)} ms off its stamp`);
});

test('hls.js renders the 608 captions of the video on the times of the decoded WebVTT track', { timeout: 120_000 }, async () => {
  const { page } = await hlsPage(`${NODE}/meeting/index.m3u8`);
  await page.waitForFunction(() => window.__cc().currentTime > 1, null, { timeout: 40_000 });
  // hls.js loads one subtitle track: the decoded 608 one here.
  await page.evaluate(() => {
    window.__hls.subtitleTrack = window.__hls.subtitleTracks.findIndex((t) => t.name === 'CC1');
  });
  await page.waitForTimeout(14_000);
  const state = await page.evaluate(() => window.__cc());
  await page.close();
  assert.deepEqual(state.fatal, []);
  const inVideo = state.tracks.find((t) => t.kind === 'captions' && t.cues.some((c) => c.text.includes('CEA-608 captions')));
  assert.ok(inVideo, `hls.js rendered no 608 caption: ${JSON.stringify(state.tracks.map((t) => [t.kind, t.label, t.cues.length]))}`);
  const decoded = state.tracks.find((t) => t.kind === 'subtitles' && t.label === 'CC1');
  assert.ok(decoded, 'the decoded CC1 track is offered');
  // hls.js joins a cue cut by segments into one; compare the starts of each caption.
  const starts = (track, text) => track.cues.filter((c) => c.text.includes(text)).map((c) => c.start);
  const pairs = [];
  for (const s of starts(inVideo, 'CEA-608 captions')) {
    const near = starts(decoded, 'CEA-608 captions').filter((d) => Math.abs(d - s) < 1);
    if (near.length) pairs.push(Math.abs(Math.min(...near) - s));
  }
  console.log(`608 in video vs decoded WebVTT, start difference ms: ${pairs.map((p) => (p * 1000).toFixed(1)).join(', ')}`);
  assert.ok(pairs.length > 0, `no caption is in both tracks: ${JSON.stringify(inVideo.cues.slice(0, 6))} ${JSON.stringify(decoded.cues.slice(0, 6))}`);
  for (const p of pairs) assert.ok(p < 0.1, `608 and WebVTT differ by ${(p * 1000).toFixed(0)} ms`);
});

test('dash.js offers the text adaptation sets and shows the cues', { timeout: 120_000 }, async () => {
  const page = await browser.newPage();
  await page.setContent('<video id="v" muted autoplay playsinline></video>');
  await page.addScriptTag({ path: DASH_JS });
  await page.evaluate((src) => {
    const video = document.getElementById('v');
    const player = dashjs.MediaPlayer().create();
    window.__errors = [];
    player.on(dashjs.MediaPlayer.events.ERROR, (e) => window.__errors.push(JSON.stringify(e.error || e)));
    player.initialize(video, src, true);
    window.__player = player;
  }, `${NODE}/meeting/index.mpd`);
  await page.waitForFunction(() => document.getElementById('v').currentTime > 1, null, { timeout: 40_000 });
  const langs = await page.evaluate(() => window.__player.getTracksFor('text').map((t) => t.lang));
  assert.ok(langs.includes('en') && langs.includes('pt-BR'), `text tracks: ${langs}`);
  await page.evaluate(() => {
    const player = window.__player;
    player.enableText(true);
    const en = player.getTracksFor('text').find((t) => t.lang === 'en');
    player.setCurrentTrack(en);
  });
  const text = `dash cue ${Date.now()}`;
  await postCue(text, 3000);
  const seen = () => page.evaluate((t) => {
    const tracks = [];
    let found = false;
    for (const track of document.getElementById('v').textTracks) {
      if (track.mode === 'disabled') track.mode = 'hidden';
      const cues = [...(track.cues || [])].map((c) => c.text);
      found ||= cues.some((c) => c.includes(t));
      tracks.push({ kind: track.kind, label: track.label, lang: track.language, mode: track.mode, cues: cues.slice(-3) });
    }
    return { found, tracks, time: document.getElementById('v').currentTime };
  }, text);
  let state = await seen();
  for (let i = 0; i < 60 && !state.found; i += 1) {
    await page.waitForTimeout(500);
    state = await seen();
  }
  assert.ok(state.found, `the cue never reached a text track: ${JSON.stringify(state)}`);
  const errors = await page.evaluate(() => window.__errors);
  await page.close();
  assert.deepEqual(errors, []);
});
