// A meeting platform's site for the player matrix: one loopback HTTP server serving a
// page per player — hls.js, video.js (VHS), Shaka Player and dash.js — each with the
// player's DEFAULT settings (unless the test passes a configuration to measure what a
// site should set), and every script from the site itself, so a node that dies takes
// none of the page with it. Every page keeps the same figures in `window.__viewer`: the
// video clock, frames decoded, stalls ('waiting' to 'playing'), the longest freeze of
// the clock, seconds played, the buffer ahead, errors and fatal errors.
import http from 'node:http';
import { readFileSync } from 'node:fs';

const file = (rel) => new URL(rel, import.meta.url);

/** The scripts the pages load, by path on the site. */
const SCRIPTS = {
  '/hls.min.js': file('../../../crates/server/assets/hls.min.js'),
  '/video.min.js': file('../../node_modules/video.js/dist/video.min.js'),
  '/shaka-player.compiled.js': file('../../node_modules/shaka-player/dist/shaka-player.compiled.js'),
  '/dash.all.min.js': file('../../node_modules/dashjs/dist/modern/umd/dash.all.min.js'),
};

/** The figures every page keeps, sampled every 50 ms. */
const SAMPLER = `
  const s = window.__viewer = {
    currentTime: 0, played: 0, frames: 0, stalls: 0, longestStallMs: 0, maxFrozenMs: 0, frozenMs: 0,
    bufferAhead: 0, errors: [], fatalErrors: [], level: null, levels: [],
  };
  const params = new URLSearchParams(location.search);
  const src = params.get('src');
  const config = params.get('config') ? JSON.parse(params.get('config')) : null;
  function sample(video) {
    let waitingSince = null;
    video.addEventListener('waiting', () => { if (waitingSince === null) { waitingSince = performance.now(); s.stalls += 1; } });
    video.addEventListener('playing', () => {
      if (waitingSince !== null) { s.longestStallMs = Math.max(s.longestStallMs, performance.now() - waitingSince); waitingSince = null; }
    });
    let last = 0; let since = performance.now();
    setInterval(() => {
      const now = performance.now();
      s.currentTime = video.currentTime;
      if (video.currentTime !== last) {
        if (last > 0 && video.currentTime > last && video.currentTime - last < 1) s.played += video.currentTime - last;
        last = video.currentTime; since = now;
      }
      s.frozenMs = now - since;
      s.maxFrozenMs = Math.max(s.maxFrozenMs, s.frozenMs);
      if (waitingSince !== null) s.longestStallMs = Math.max(s.longestStallMs, now - waitingSince);
      s.bufferAhead = video.buffered.length ? video.buffered.end(video.buffered.length - 1) - video.currentTime : 0;
      const q = video.getVideoPlaybackQuality ? video.getVideoPlaybackQuality() : null;
      s.frames = q ? q.totalVideoFrames - q.droppedVideoFrames : 0;
    }, 50);
  }
  const fatal = (details) => { const e = { details: String(details).slice(0, 300), at: Date.now() }; s.errors.push(e); s.fatalErrors.push(e); };
  const soft = (details) => { s.errors.push({ details: String(details).slice(0, 300), at: Date.now() }); if (s.errors.length > 400) s.errors.splice(0, 100); };
`;

const page = (script, body) => `<!doctype html><html><body>
<video id="video" muted autoplay playsinline></video>
<script src="${script}"></script>
<script>${SAMPLER}${body}</script></body></html>`;

/** The pages, by player name. */
const PAGES = {
  // hls.js as a platform embeds it: new Hls(), no settings (or `config`).
  hlsjs: page('/hls.min.js', `
  const video = document.getElementById('video');
  const hls = window.__hls = new Hls(config || {});
  sample(video);
  hls.on(Hls.Events.LEVEL_SWITCHED, (_, d) => { s.level = d.level; });
  hls.on(Hls.Events.MANIFEST_PARSED, () => { s.levels = hls.levels.map((l) => l.height); });
  hls.on(Hls.Events.ERROR, (_, d) => (d.fatal ? fatal : soft)(d.details));
  // ?reopen=URL,URL: a site whose player does not switch (it plays one media playlist)
  // and, on a fatal error, reopens the way in (/watch/{meeting}) at the next of the
  // platform's hosts, as docs/ott-redundancy.md asks of such sites.
  const reopen = (params.get('reopen') || '').split(',').filter(Boolean);
  s.reopened = 0;
  if (reopen.length) {
    hls.on(Hls.Events.ERROR, (_, d) => {
      if (!d.fatal) return;
      const next = reopen[s.reopened % reopen.length];
      s.reopened += 1;
      setTimeout(() => { hls.loadSource(next); hls.startLoad(); }, 500);
    });
  }
  // ?keepRung=1: what a site should add (as the shipped player page does): a rung the
  // viewer picked is put back after a failover replaces the levels with the backup's.
  if (params.get('keepRung') === '1') {
    let picked = null;
    window.__pick = (index) => { picked = { height: hls.levels[index].height, bitrate: hls.levels[index].bitrate }; hls.currentLevel = index; };
    hls.on(Hls.Events.LEVELS_UPDATED, () => {
      if (!picked) return;
      setTimeout(() => {
        const index = hls.levels.findIndex((l) => l.height === picked.height && l.bitrate === picked.bitrate);
        if (index >= 0 && (hls.loadLevel !== index || hls.manualLevel !== index)) hls.loadLevel = index;
      }, 0);
    });
  } else {
    window.__pick = (index) => { hls.currentLevel = index; };
  }
  hls.loadSource(src);
  hls.attachMedia(video);
  video.play().catch(() => {});`),
  // video.js 8 with its bundled VHS: videojs(element), src with the HLS or DASH type.
  videojs: page('/video.min.js', `
  const player = window.__player = videojs('video', Object.assign({ muted: true, autoplay: 'muted' }, config || {}));
  sample(player.tech({ IWillNotUseThisInPlugins: true }).el());
  player.on('error', () => { const e = player.error(); fatal('videojs ' + (e && e.code) + ' ' + (e && e.message)); });
  player.ready(() => {
    const tech = player.tech({ IWillNotUseThisInPlugins: true });
    setInterval(() => { s.vhs = !!tech.vhs; }, 250);
  });
  player.src({ src, type: /\\.mpd(\\?|$)/.test(src) ? 'application/dash+xml' : 'application/x-mpegURL' });
  player.play().catch(() => {});`),
  // Shaka Player: new shaka.Player(), attach, load (HLS or DASH by the URL), or `config`.
  shaka: page('/shaka-player.compiled.js', `
  const video = document.getElementById('video');
  sample(video);
  shaka.polyfill.installAll();
  const player = window.__player = new shaka.Player();
  if (config) player.configure(config);
  player.addEventListener('error', (e) => {
    const d = e.detail || {};
    (d.severity === 2 ? fatal : soft)('shaka ' + d.code + ' ' + JSON.stringify(d.data || []).slice(0, 200));
  });
  player.attach(video).then(() => player.load(src)).then(() => video.play().catch(() => {}))
    .catch((e) => fatal('load ' + (e && e.code)));`),
  // dash.js: MediaPlayer().create(), initialize (or `config` as its settings). dash.js has
  // no fatal flag: a download it gave up on (25 the MPD, 27 a segment) is reported and play
  // goes on when another try succeeds; any other error counts as fatal.
  dashjs: page('/dash.all.min.js', `
  const video = document.getElementById('video');
  sample(video);
  const player = window.__player = dashjs.MediaPlayer().create();
  player.updateSettings(Object.assign({ debug: { logLevel: dashjs.Debug.LOG_LEVEL_WARNING } }, config || {}));
  player.on(dashjs.MediaPlayer.events.ERROR, (e) => {
    const code = e.error && e.error.code;
    (code === 25 || code === 27 ? soft : fatal)('dash.js ' + code + ' ' + JSON.stringify(e.error || e).slice(0, 200));
  });
  player.on(dashjs.MediaPlayer.events.PLAYBACK_ERROR, (e) => fatal('playback ' + JSON.stringify(e.error || e).slice(0, 200)));
  player.initialize(video, src, true);`),
};

/** The player names the site has a page for. */
export const PLAYERS = Object.keys(PAGES);

let site = null;

/** The site's base URL (`http://127.0.0.1:PORT`); started once per test process. */
export async function playerSite() {
  if (site) return site;
  const server = http.createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    if (SCRIPTS[path]) {
      res.writeHead(200, { 'content-type': 'text/javascript' });
      res.end(readFileSync(SCRIPTS[path]));
      return;
    }
    const name = path.replace(/^\/|\.html$/g, '');
    if (!PAGES[name]) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html', 'cache-control': 'no-store' });
    res.end(PAGES[name]);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  site = `http://127.0.0.1:${server.address().port}`;
  return site;
}

/** A media segment (not a playlist, an MPD, a steering manifest or an init segment). */
export function isMedia(url) {
  const u = new URL(url);
  return /\.(ts|m4s|mp4|aac)$/.test(u.pathname) && !/init/.test(u.pathname);
}

/**
 * Opens `player` (a name of PLAYERS) on `page` playing `src`, with `config` (null: the
 * player's defaults; `keepRung`, hls.js only: put a picked rung back after a failover;
 * `reopen`, hls.js only: way-in URLs reopened in turn after a fatal error). Records every media segment the page fetched (`media`: url,
 * host, at, status) from Playwright's side, the same for every player. Resolves once
 * `playSeconds` have played; rejects after `limitMs`.
 */
export async function openPlayer(page, player, src, { config = null, playSeconds = 8, limitMs = 45_000, keepRung = false, reopen = [] } = {}) {
  const base = await playerSite();
  const media = [];
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('requestfinished', async (r) => {
    if (!isMedia(r.url())) return;
    const res = await r.response().catch(() => null);
    media.push({ url: r.url(), host: new URL(r.url()).host, at: Date.now(), status: res ? res.status() : 0 });
    if (media.length > 2_000) media.splice(0, 500);
  });
  const query = new URLSearchParams({ src });
  if (config) query.set('config', JSON.stringify(config));
  if (keepRung) query.set('keepRung', '1');
  if (reopen.length) query.set('reopen', reopen.join(','));
  // A node that has just started, or come back, may shed a first request with a
  // back-pressure 503, which some players take as fatal: like a person, reload.
  const deadline = Date.now() + limitMs;
  for (let attempt = 1; ; attempt += 1) {
    media.length = 0;
    await page.goto(`${base}/${player}.html?${query}`);
    const left = deadline - Date.now();
    const done = await page.waitForFunction((t) => window.__viewer && (window.__viewer.played >= t || window.__viewer.fatalErrors.length > 0),
      playSeconds, { timeout: Math.max(1_000, left) }).then(() => page.evaluate(() => window.__viewer.fatalErrors)).catch(() => null);
    if (done && done.length === 0) {
      if (attempt > 1) console.log(`${player} ${src}: playing at attempt ${attempt}`);
      return { media, pageErrors };
    }
    if (Date.now() > deadline - 2_000) throw new Error(`${player} did not play ${src} within ${limitMs} ms: ${JSON.stringify(done)}`);
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

/** The viewer's figures now. */
export function viewerState(page) {
  return page.evaluate(() => JSON.parse(JSON.stringify(window.__viewer)));
}

/** Resets the stall figures so they count from now on. */
export function resetStalls(page) {
  return page.evaluate(() => {
    const s = window.__viewer;
    s.stalls = 0;
    s.longestStallMs = 0;
    s.maxFrozenMs = 0;
  });
}
