import http from 'node:http';
import { readFileSync } from 'node:fs';

// hls.js with its default settings, as a meeting platform's own page would embed it
// (not the shipped player page and its short timeouts): the page is served from a
// loopback origin of its own (as a platform's site is another origin than the nodes;
// Chromium lets a loopback page fetch from other loopback ports), loads a node's copy of
// hls.js and plays a master playlist. `window.__viewer` holds what the tests read: the video
// clock, stalls, the fragments and steering manifests loaded, errors.

// What both pages measure, every 50 ms: the video clock, stalls (from 'waiting' to
// 'playing'), the longest freeze of the clock, seconds played, the buffer ahead.
const SAMPLER = `  let waitingSince = null;
  video.addEventListener('waiting', () => { if (waitingSince === null) { waitingSince = performance.now(); s.stalls += 1; } });
  video.addEventListener('playing', () => {
    if (waitingSince !== null) { s.longestStallMs = Math.max(s.longestStallMs, performance.now() - waitingSince); waitingSince = null; }
  });
  let last = 0; let since = performance.now();
  setInterval(() => {
    const now = performance.now();
    s.currentTime = video.currentTime;
    if (video.currentTime !== last) { if (last > 0 && video.currentTime > last && video.currentTime - last < 1) s.played += video.currentTime - last; last = video.currentTime; since = now; }
    s.frozenMs = now - since;
    s.maxFrozenMs = Math.max(s.maxFrozenMs, s.frozenMs);
    if (waitingSince !== null) s.longestStallMs = Math.max(s.longestStallMs, now - waitingSince);
    s.bufferAhead = video.buffered.length ? video.buffered.end(video.buffered.length - 1) - video.currentTime : 0;
  }, 50);
`;

const PAGE = `<!doctype html><html><body>
<video id="video" muted autoplay playsinline></video>
<script src="HLS_JS"></script>
<script>
  const s = window.__viewer = {
    currentTime: 0, played: 0, stalls: 0, longestStallMs: 0, maxFrozenMs: 0, frozenMs: 0,
    fragments: [], loads: [], steering: [], errors: [], fatalErrors: [], pathways: [],
  };
  const video = document.getElementById('video');
  // E2E_HLS_DEBUG=1 in the test's environment: hls.js logs its decisions to the console.
  const hls = window.__hls = new Hls(${process.env.E2E_HLS_DEBUG === '1' ? '{ debug: true }' : ''});
${SAMPLER}  setInterval(() => {
    const edge = hls.liveSyncPosition;
    s.latency = edge ? edge - video.currentTime : null;
  }, 50);
  hls.on(Hls.Events.FRAG_LOADED, (_, d) => {
    const url = d.part ? d.part.url : d.frag.url;
    if (d.frag.type === 'main' && url) s.fragments.push({ url, at: Date.now() });
    if (s.fragments.length > 400) s.fragments.splice(0, 100);
  });
  // Each fragment or part load as it starts: a hang holds the one in flight.
  hls.on(Hls.Events.FRAG_LOADING, (_, d) => {
    const url = d.part ? d.part.url : d.frag.url;
    if (d.frag.type === 'main' && url) s.loads.push({ url, at: Date.now() });
    if (s.loads.length > 400) s.loads.splice(0, 100);
  });
  hls.on(Hls.Events.STEERING_MANIFEST_LOADED, (_, d) => {
    s.steering.push({ url: d.url, at: Date.now(), priority: d.steeringManifest['PATHWAY-PRIORITY'] });
    if (s.steering.length > 400) s.steering.splice(0, 100);
  });
  hls.on(Hls.Events.LEVELS_UPDATED, (_, d) => { s.pathways.push({ at: Date.now(), pathway: d.levels[0] && d.levels[0].pathwayId }); });
  hls.on(Hls.Events.ERROR, (_, d) => {
    // A part's own URL: the segment a low-latency part belongs to may not be complete
    // yet, and such a segment has no URL of its own.
    const url = (d.part && d.part.url) || (d.frag && d.frag.url) || (d.context && d.context.url) || null;
    const e = { details: d.details, fatal: d.fatal, at: Date.now(), url };
    s.errors.push(e);
    if (d.fatal) s.fatalErrors.push(e);
  });
  hls.loadSource(new URLSearchParams(location.search).get('src'));
  hls.attachMedia(video);
  video.play().catch(() => {});
</script></body></html>`;

// dash.js with its default settings, the same figures in `window.__viewer`.
const DASH_PAGE = `<!doctype html><html><body>
<video id="video" muted autoplay playsinline></video>
<script src="/dash.all.min.js"></script>
<script>
  const s = window.__viewer = {
    currentTime: 0, played: 0, stalls: 0, longestStallMs: 0, maxFrozenMs: 0, frozenMs: 0,
    fragments: [], steering: [], errors: [], fatalErrors: [], bufferAhead: 0,
  };
  const video = document.getElementById('video');
  const player = window.__player = dashjs.MediaPlayer().create();
  player.updateSettings({ debug: { logLevel: dashjs.Debug.LOG_LEVEL_WARNING } });
${SAMPLER}  const E = dashjs.MediaPlayer.events;
  player.on(E.FRAGMENT_LOADING_COMPLETED, (e) => {
    const url = e.request && e.request.url;
    if (url && e.request.mediaType === 'video' && !(e.response == null)) s.fragments.push({ url, at: Date.now() });
    if (s.fragments.length > 400) s.fragments.splice(0, 100);
  });
  player.on(E.CONTENT_STEERING_REQUEST_COMPLETED, (e) => {
    const data = e.currentSteeringResponseData || {};
    s.steering.push({ url: e.url, at: Date.now(), priority: data.pathwayPriority || [] });
    if (s.steering.length > 400) s.steering.splice(0, 100);
  });
  // dash.js has no fatal flag: a download it gave up on (25 the MPD, 27 a segment) is
  // reported and play goes on when another try succeeds — whether it did is what the
  // tests measure (played, stalls); any other error counts as fatal.
  player.on(E.ERROR, (e) => {
    const code = e.error && e.error.code;
    const err = { details: JSON.stringify(e.error || e).slice(0, 300), code, at: Date.now() };
    s.errors.push(err);
    if (code !== 25 && code !== 27) s.fatalErrors.push(err);
  });
  player.on(E.PLAYBACK_ERROR, (e) => s.fatalErrors.push({ details: 'playback ' + JSON.stringify(e.error || e).slice(0, 300), at: Date.now() }));
  player.initialize(video, new URLSearchParams(location.search).get('src'), true);
</script></body></html>`;

// Shaka Player with its default configuration, the same figures in \`window.__viewer\`;
// Shaka marks each error RECOVERABLE (1) or CRITICAL (2): critical ones are fatal.
const SHAKA_PAGE = `<!doctype html><html><body>
<video id="video" muted autoplay playsinline></video>
<script src="/shaka-player.compiled.js"></script>
<script>
  const s = window.__viewer = {
    currentTime: 0, played: 0, stalls: 0, longestStallMs: 0, maxFrozenMs: 0, frozenMs: 0,
    fragments: [], steering: [], manifests: [], errors: [], fatalErrors: [], bufferAhead: 0,
  };
  const video = document.getElementById('video');
${SAMPLER}  shaka.polyfill.installAll();
  const player = window.__player = new shaka.Player();
  const T = shaka.net.NetworkingEngine.RequestType;
  const AT = shaka.net.NetworkingEngine.AdvancedRequestType;
  player.getNetworkingEngine().registerResponseFilter((type, response, context) => {
    const at = Date.now();
    if (type === T.SEGMENT && context && context.type === AT.MEDIA_SEGMENT && /-v\\.m4s|\\/seg-[0-9]+\\.m4s/.test(response.uri)) {
      s.fragments.push({ url: response.uri, at });
      if (s.fragments.length > 400) s.fragments.splice(0, 100);
    } else if (type === T.CONTENT_STEERING) {
      let priority = [];
      try { priority = JSON.parse(new TextDecoder().decode(response.data))['PATHWAY-PRIORITY'] || []; } catch (e) {}
      s.steering.push({ url: response.uri, at, priority });
      if (s.steering.length > 400) s.steering.splice(0, 100);
    } else if (type === T.MANIFEST) {
      s.manifests.push({ url: response.uri, at });
      if (s.manifests.length > 400) s.manifests.splice(0, 100);
    }
  });
  player.addEventListener('error', (e) => {
    const d = e.detail || {};
    const err = { details: 'shaka ' + d.code + ' ' + JSON.stringify(d.data || []).slice(0, 200), code: d.code, severity: d.severity, at: Date.now() };
    s.errors.push(err);
    if (d.severity === 2) s.fatalErrors.push(err);
  });
  player.attach(video).then(() => player.load(new URLSearchParams(location.search).get('src'))).then(() => video.play().catch(() => {}))
    .catch((e) => s.fatalErrors.push({ details: 'load ' + (e && e.code), at: Date.now() }));
</script></body></html>`;

const SHAKA_JS = new URL('../node_modules/shaka-player/dist/shaka-player.compiled.js', import.meta.url);

const DASH_JS = new URL('../node_modules/dashjs/dist/modern/umd/dash.all.min.js', import.meta.url);

let site = null;

/** The platform's site: one loopback HTTP server serving the page, started once. */
async function platformSite() {
  if (site) return site;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname === '/dash.all.min.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' });
      res.end(readFileSync(DASH_JS));
      return;
    }
    if (url.pathname === '/shaka-player.compiled.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' });
      res.end(readFileSync(SHAKA_JS));
      return;
    }
    if (url.pathname === '/shaka.html') {
      res.writeHead(200, { 'content-type': 'text/html', 'cache-control': 'no-store' });
      res.end(SHAKA_PAGE);
      return;
    }
    if (url.pathname === '/dash.html') {
      res.writeHead(200, { 'content-type': 'text/html', 'cache-control': 'no-store' });
      res.end(DASH_PAGE);
      return;
    }
    const script = url.searchParams.get('hls') || '';
    res.writeHead(200, { 'content-type': 'text/html', 'cache-control': 'no-store' });
    res.end(PAGE.replace('HLS_JS', script.replace(/[<>"]/g, '')));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  site = `http://127.0.0.1:${server.address().port}`;
  return site;
}

/**
 * Opens hls.js with default settings (the script from `node`), playing `src`; resolves
 * once it has played `playSeconds`.
 */
export async function openDefaultsPlayer(page, node, src, playSeconds = 8) {
  const base = await platformSite();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.goto(`${base}/watch.html?hls=${encodeURIComponent(`${node.base}/player/hls.min.js`)}&src=${encodeURIComponent(src)}`);
  await page.waitForFunction((t) => window.__viewer && window.__viewer.played >= t, playSeconds, { timeout: 45_000 });
  return { pageErrors };
}

/**
 * Opens dash.js (or, with `player` 'shaka', Shaka Player) with default settings playing
 * `src`; resolves once it has played `playSeconds`.
 */
export async function openDashDefaults(page, src, playSeconds = 8, player = 'dash') {
  const base = await platformSite();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.goto(`${base}/${player}.html?src=${encodeURIComponent(src)}`);
  await page.waitForFunction((t) => window.__viewer && window.__viewer.played >= t, playSeconds, { timeout: 45_000 });
  return { pageErrors };
}

/** The viewer's figures now. */
export function viewerState(page) {
  return page.evaluate(() => JSON.parse(JSON.stringify(window.__viewer)));
}

/** Resets the stall figures so they count from now on. */
export function resetViewerStalls(page) {
  return page.evaluate(() => {
    const s = window.__viewer;
    s.stalls = 0;
    s.longestStallMs = 0;
    s.maxFrozenMs = 0;
  });
}
