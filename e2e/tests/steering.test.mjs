// Steered failover with a player's DEFAULT settings (OTT-PROT-1, RFC 8216bis
// §7): hls.js as a meeting platform embeds it — no tuned timeouts — plays node a's
// master playlist (pathways a, and two backups, with a steering server elsewhere in the
// mesh) while a is hung (SIGSTOP), killed (kill -9), loses its input, or is drained by
// its operator. The mesh notices within seconds and the steering manifests move the
// viewer to a backup before its buffer runs out. Prints one row per failure for
// docs/measured.md; `bench/steering.py` runs each failure ten times.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchBrowser } from '../lib/cluster.mjs';
import { startCluster, waitProtected, pollUntil, masterOf } from '../lib/processes.mjs';
import { openDefaultsPlayer, openDashDefaults, viewerState, resetViewerStalls } from '../lib/defaults_player.mjs';

/** The goal for a hung node under default settings: a stall of at most 2 s. */
const STALL_GOAL_MS = 2_000;
/** Headroom for a shared 2-core CI machine (Chromium, four brdyun processes, the test). */
const STALL_SLACK_MS = 1_000;
/** Runs of each failure (`bench/steering.py` sets 10; the e2e suite runs one). */
const RUNS = Math.max(1, Number(process.env.STEERING_RUNS || 1));
/**
 * `STEERING_JITTER=1`: each failure comes at a moment drawn uniformly over one 2-s
 * segment after the usual wait, instead of a fixed time after playback starts (which
 * ties it to a phase of the segment cycle): what a real failure, at any moment, meets.
 */
const JITTER = process.env.STEERING_JITTER === '1';
/** How long playback is watched after the failure. */
const WATCH_MS = 20_000;

let cluster;
let browser;
const rows = [];

before(async () => {
  // Each node on its own loopback address, as nodes of a domain have host names of
  // their own (Shaka bans a failing host, and would otherwise ban every node).
  cluster = await startCluster({ distinctHosts: true });
  const { a, b, c } = cluster.nodes;
  await waitProtected([a, b, c]);
  browser = await launchBrowser();
});

after(async () => {
  console.log('steered failover, hls.js default settings:');
  for (const r of rows) console.log(`  ${r}`);
  await browser?.close();
  await cluster?.stopAll();
});

/**
 * hls.js's default time to the first byte of a fragment or part
 * (`fragLoadPolicy.default.maxTimeToFirstByteMs`): how long a request held by a hung
 * node keeps it waiting.
 */
const HLS_FRAGMENT_TIMEOUT_MS = 10_000;

/**
 * When hls.js was held by the hang (HELD_NOTE): the start of the last fragment or part
 * load it sent to node `port` before the steering moved it, if a load there timed out
 * after the failure; null otherwise.
 *
 * HELD_NOTE: hls.js 1.7.4 does not abort a fragment or part in flight when the steering
 * changes the pathway (`stream-controller` keeps `fragCurrent`). A hang that catches one
 * in flight, or comes between a playlist naming it and its request, holds the player
 * until that request's timeout; the retry then goes to the steered pathway. The server
 * cannot answer for a stopped process. With 1-s parts a low-latency player sends a
 * request every second, so this window comes round more often than with 2-s segments.
 */
function heldByHang(state, port, failedAt, steered) {
  const timedOut = state.errors.some((e) => e.at > failedAt && e.details === 'fragLoadTimeOut' && portOf(e.url) === port);
  if (!timedOut) return null;
  const until = steered ? steered.at : Infinity;
  const sent = (state.loads || []).filter((l) => portOf(l.url) === port && l.at <= until && l.at > failedAt - HLS_FRAGMENT_TIMEOUT_MS);
  return sent.length ? sent.at(-1).at : null;
}

/** Errors as `code×count` (or their details when they carry no code). */
function summarise(errors) {
  const counts = new Map();
  for (const e of errors) {
    const key = e.code ?? e.details;
    counts.set(key, (counts.get(key) || 0) + 1);
  }
  return counts.size ? [...counts].map(([k, n]) => `${k}×${n}`).join(', ') : 'none';
}

const portOf = (url) => (url ? new URL(url).port : null);

/**
 * Plays a's master playlist with hls.js defaults (or a's MPD with dash.js, `dash`
 * true, or Shaka, `dash` 'shaka'), calls `fail()`, watches WATCH_MS and checks playback
 * went on from b or c within the stall goal.
 */
async function survives(label, fail, {
  dash = false, ll = false, stallGoalMs = STALL_GOAL_MS, watchMs = WATCH_MS, recoverWithinMs = 0, forcedHold = false,
} = {}) {
  const { a, b, c } = cluster.nodes;
  await waitProtected([a, b, c]);
  // A node back from a hang or a restart hears its peers again within a gossip round or
  // two; until then it may find them silent and offer no backup. Let it settle.
  await pollUntil('a offers two backups with steering', async () => {
    const m = await masterOf(a, 'meeting', 2_000, ll ? 'll-index.m3u8' : 'index.m3u8');
    return m && m.variants.length === 3 && m.text.includes('#EXT-X-CONTENT-STEERING');
  }, { limitMs: 30_000 });
  await new Promise((r) => setTimeout(r, 2_000));
  const master = await masterOf(a, 'meeting', 2_000, ll ? 'll-index.m3u8' : 'index.m3u8');
  if (!dash) assert.match(master.text, /#EXT-X-CONTENT-STEERING:SERVER-URI="[^"]+\/steering\/meeting\?p=node-a,node-[bc],node-[bc]",PATHWAY-ID="node-a"/,
    `a's master names the pathways and a steering server:\n${master.text}`);
  // hls.js starts three target durations behind the newest segment when the playlist
  // holds them (a meeting that has run a while); a window younger than that would start
  // it at the edge, with no buffer.
  await pollUntil('a\'s window holds four segments', async () => {
    const text = await fetch(`${a.base}/meeting/mono.m3u8`).then((r) => r.text()).catch(() => '');
    return (text.match(/#EXTINF/g) || []).length >= 4;
  }, { limitMs: 30_000 });
  const page = await browser.newPage();
  const trace = process.env.E2E_HLS_DEBUG === '1' ? recordTrace(page) : null;
  try {
    const { pageErrors } = dash
      ? await openDashDefaults(page, `${a.base}/meeting/index.mpd`, 8, dash === true ? 'dash' : dash)
      : await openDefaultsPlayer(page, a, `${a.base}/meeting/${ll ? 'll-index.m3u8' : 'index.m3u8'}`);
    // The first steering answer comes within a TTL or two of the start.
    if (!dash) await page.waitForFunction(() => window.__viewer.steering.length > 0, null, { timeout: 10_000 }).catch(() => {});
    const before = await viewerState(page);
    assert.equal(portOf(before.fragments.at(-1)?.url), String(a.http), 'playing from node a before the failure');
    if (!dash) assert.ok(before.steering.length > 0, `the player asks the steering server: ${JSON.stringify(before.errors)} ${JSON.stringify(before.pathways)}`);
    assert.ok(before.steering.every((s) => portOf(s.url) !== String(a.http)),
      `steering is asked of a backup, never of the node the viewer plays from: ${before.steering.map((s) => s.url)}`);
    await resetViewerStalls(page);
    if (JITTER) await page.waitForTimeout(Math.random() * 2_000);
    const edge = ll ? await page.evaluate(atSegmentEnd) : null;
    let failedAt = Date.now();
    // A failure that waits for its moment says when it struck.
    const struck = await fail(page);
    if (typeof struck === 'number') failedAt = struck;
    await page.waitForTimeout(watchMs);
    // A player still on a (a download it keeps retrying there) is watched on, up to
    // `recoverWithinMs` after the failure, until it fetches from a backup and plays again.
    const onBackup = (v) => [String(b.http), String(c.http)].includes(portOf(v.fragments.at(-1)?.url));
    let end = await viewerState(page);
    while (!onBackup(end) && Date.now() - failedAt < recoverWithinMs) {
      await page.waitForTimeout(1_000);
      end = await viewerState(page);
      if (onBackup(end)) {
        await page.waitForTimeout(5_000);
        end = await viewerState(page);
      }
    }
    const watchedMs = Date.now() - failedAt;
    const played = end.played - before.played;
    const stall = Math.round(end.longestStallMs);
    const frozen = Math.round(end.maxFrozenMs);
    const moved = end.fragments.find((f) => f.at > failedAt && portOf(f.url) !== String(a.http));
    const steered = end.steering.find((s) => s.at > failedAt && s.priority[0] !== 'node-a');
    // hls.js in low-latency mode, its buffer ending where a complete segment ends, may
    // find that segment already loaded on the new pathway and load nothing until the
    // segment's parts leave the playlist (see HLS_LOOP_NOTE): the stall is bounded by
    // three target durations then.
    let goalMs = edge?.atEnd ? Math.max(stallGoalMs, 3 * edge.targetDuration * 1000) : stallGoalMs;
    // A request the hang held is bounded by hls.js's timeout from when it was sent.
    const heldSince = dash ? null : heldByHang(end, String(a.http), failedAt, steered);
    if (heldSince !== null) goalMs = Math.max(goalMs, heldSince + HLS_FRAGMENT_TIMEOUT_MS - failedAt);
    const row = `${label}: longest stall ${stall} ms, video clock frozen at most ${frozen} ms, ${end.stalls} stall(s), `
      + (edge ? `buffer ${edge.atEnd ? 'at' : 'not at'} a segment's end at the failure, ` : '')
      + (heldSince !== null ? `a load from a held by the hang (begun ${heldSince - failedAt} ms from the failure, hls.js's timeout ${HLS_FRAGMENT_TIMEOUT_MS} ms), ` : '')
      + (forcedHold && heldSince === null ? 'the request the hang caught was given up by hls.js before its timeout, ' : '')
      + `first fragment from a backup ${moved ? moved.at - failedAt : '-'} ms after the failure, `
      + `steered off a after ${steered ? steered.at - failedAt : '-'} ms, buffer ${before.bufferAhead.toFixed(1)} s at the failure, `
      + `fatal errors ${end.fatalErrors.length}, errors after it ${summarise(end.errors.filter((e) => e.at > failedAt))}`;
    rows.push(row);
    console.log(`steering ${row}`);
    if (trace && Math.max(stall, frozen) > STALL_GOAL_MS) console.log(`steering trace of "${label}": ${trace.save(failedAt)}`);
    assert.deepEqual(end.fatalErrors, [], 'no fatal player error');
    assert.deepEqual(pageErrors, []);
    assert.ok(onBackup(end), `the last fragment came from b or c, not ${end.fragments.at(-1)?.url}`);
    assert.ok(played >= (watchedMs - stall) / 1000 - 5, `played only ${played.toFixed(1)} s in ${watchedMs / 1000} s`);
    assert.ok(stall <= goalMs + STALL_SLACK_MS, `longest stall ${stall} ms, goal ${goalMs} ms (+${STALL_SLACK_MS} ms slack)`);
    assert.ok(frozen <= goalMs + STALL_SLACK_MS, `video clock frozen ${frozen} ms, goal ${goalMs} ms (+${STALL_SLACK_MS} ms slack)`);
    return end;
  } finally {
    await page.close();
  }
}

/**
 * With `E2E_HLS_DEBUG=1` (hls.js logging its decisions): the page's console and its
 * requests, kept so that a run stalling over 2 s can save them, 3 s before the
 * failure to 15 s after, times relative to it, in a file under the OS's temp dir.
 */
function recordTrace(page) {
  const log = [];
  page.on('console', (m) => log.push([Date.now(), 'console', m.text().slice(0, 400)]));
  page.on('request', (r) => log.push([Date.now(), 'request', r.url()]));
  page.on('requestfinished', (r) => log.push([Date.now(), 'finished', r.url()]));
  page.on('requestfailed', (r) => log.push([Date.now(), 'failed', r.failure()?.errorText, r.url()]));
  return {
    save(failedAt) {
      const lines = log.filter(([t]) => t > failedAt - 3_000 && t < failedAt + 15_000)
        .map(([t, ...rest]) => [((t - failedAt) / 1000).toFixed(3), ...rest].join(' '));
      const file = path.join(os.tmpdir(), `brdyun-steering-trace-${failedAt}.log`);
      fs.writeFileSync(file, `${lines.join('\n')}\n`);
      return file;
    },
  };
}

/**
 * In the page, just before a failure: whether hls.js's buffer ends where the newest
 * complete segment of its playlist ends (within 5 ms), and the target duration.
 *
 * HLS_LOOP_NOTE: hls.js 1.7.4 keys what it has loaded by level index and MSN, and a
 * pathway's copy of a level has the index of the one it replaces. In low-latency mode,
 * with the buffer ending exactly where a complete segment ends, the new pathway's
 * playlist (aligned by its dates, in floating point) may put that segment's end a
 * hair past the buffer's: hls.js then picks that segment, finds it loaded, and its
 * loop guard loads nothing until the segment's parts leave the playlist (three
 * target durations). Buffers ending mid-segment pick the segment in progress and go on.
 */
function atSegmentEnd() {
  const hls = window.__hls;
  const video = document.getElementById('video');
  const details = hls.levels[hls.currentLevel]?.details;
  const last = details?.fragments.at(-1);
  const end = video.buffered.length ? video.buffered.end(video.buffered.length - 1) : 0;
  return { atEnd: !!last && Math.abs(end - last.end) < 0.005, targetDuration: details?.targetduration ?? 0 };
}

test('hls.js defaults: a hung node (SIGSTOP) is steered away from before the buffer runs out', { timeout: 150_000 * RUNS }, async () => {
  const { a, b, c } = cluster.nodes;
  for (let run = 1; run <= RUNS; run++) {
    try {
      await survives(RUNS > 1 ? `SIGSTOP #${run}` : 'SIGSTOP', () => a.hang());
    } finally {
      a.resume();
    }
    if (run < RUNS) await waitProtected([a, b, c]);
  }
});

test('hls.js defaults, low latency: a hung or killed node is steered away from, parts and all', { timeout: 200_000 * RUNS }, async () => {
  const { a, b, c } = cluster.nodes;
  for (let run = 1; run <= RUNS; run++) {
    const n = RUNS > 1 ? ` #${run}` : '';
    try {
      await survives(`LL-HLS SIGSTOP${n}`, () => a.hang(), { ll: true });
    } finally {
      a.resume();
    }
    try {
      await survives(`LL-HLS kill -9${n}`, () => a.kill9(), { ll: true });
    } finally {
      if (!a.pid) await a.start();
      await waitProtected([a, b, c]);
    }
  }
});

/**
 * Hangs `node` the moment the player on `page` sends it its next fragment or part
 * request, which then goes to the hung node (HELD_NOTE); resolves with that moment.
 */
function hangAsMediaLeaves(page, node) {
  const port = String(node.http);
  const media = (u) => u.port === port && !u.pathname.endsWith('.m3u8') && !u.pathname.startsWith('/steering/');
  return new Promise((resolve) => {
    page.route(media, async (route) => {
      node.hang();
      resolve(Date.now());
      await route.continue().catch(() => {});
    }, { times: 1 });
  });
}

test('hls.js defaults, low latency: a part the hang holds costs at most hls.js\'s timeout, then plays on from a backup', { timeout: 120_000 }, async () => {
  const { a, b, c } = cluster.nodes;
  try {
    await survives('LL-HLS SIGSTOP holding a part', (page) => hangAsMediaLeaves(page, a), { ll: true, forcedHold: true });
  } finally {
    a.resume();
  }
  await waitProtected([a, b, c]);
});

/**
 * `STEERING_EXPOSURE=1`: how often a hang at a random moment would hold a request of
 * hls.js (HELD_NOTE): the share of 30 s of playback, twice in each mode, between the
 * arrival of a media playlist and the end of the fragment or part request it leads to.
 */
test('hls.js defaults: the share of time a hang would hold a fragment or part request', {
  timeout: 300_000, skip: process.env.STEERING_EXPOSURE !== '1' && 'set STEERING_EXPOSURE=1 to measure',
}, async () => {
  const { a } = cluster.nodes;
  const port = String(a.http);
  for (const ll of [true, false, true, false]) {
    const page = await browser.newPage();
    const events = [];
    page.on('request', (r) => events.push([performance.now(), 'sent', r.url()]));
    page.on('requestfinished', (r) => events.push([performance.now(), 'done', r.url()]));
    try {
      await openDefaultsPlayer(page, a, `${a.base}/meeting/${ll ? 'll-index.m3u8' : 'index.m3u8'}`);
      events.length = 0;
      const from = performance.now();
      await page.waitForTimeout(30_000);
      const span = performance.now() - from;
      // The video's playlists and media (captions do not stall the video).
      const kind = (u) => {
        const url = new URL(u);
        if (url.port !== port || url.pathname.startsWith('/steering/') || /\/sub-[^/]*$/.test(url.pathname)) return null;
        return url.pathname.endsWith('.m3u8') ? 'playlist' : 'media';
      };
      const playlistsDone = events.filter(([, k, u]) => k === 'done' && kind(u) === 'playlist').map(([t]) => t);
      const sentAt = new Map();
      let exposedMs = 0;
      let requests = 0;
      for (const [t, k, url] of events) {
        if (kind(url) !== 'media') continue;
        if (k === 'sent') sentAt.set(url, t);
        if (k === 'done' && sentAt.has(url)) {
          exposedMs += t - opens(sentAt.get(url), playlistsDone);
          requests += 1;
        }
      }
      console.log(`exposure ${ll ? 'low latency' : '2-s segments'}: ${requests} media requests, exposed ${exposedMs.toFixed(0)} ms `
        + `of ${span.toFixed(0)} ms (${(100 * exposedMs / span).toFixed(2)} %)`);
      assert.ok(requests > 0, 'the player fetched media from a');
    } finally {
      await page.close();
    }
  }
  /**
   * A request's window opens with the playlist that named it: the last one to arrive
   * before it was sent (within 20 ms after: the browser reports a response's end after
   * the request it led to) and at most 2 s before; else when it was sent.
   */
  function opens(sent, playlistsDone) {
    const named = playlistsDone.filter((t) => t <= sent + 20).at(-1);
    return named !== undefined && sent - named < 2_000 ? Math.min(named, sent) : sent;
  }
});

/** Drains a from its Backups screen while hls.js plays it, checks, undrains. */
async function drainOnce(label) {
  const { a, b, c } = cluster.nodes;
  const api = (method) => fetch(`${a.base}/api/drain`, { method }).then((r) => r.json());
  const screen = await browser.newPage();
  const button = screen.locator('[data-testid="drain-button"]');
  const shown = () => screen.locator('[data-testid="drain-state"]').innerText();
  try {
    await screen.goto(`${a.base}/backups`);
    await screen.waitForFunction(() => document.getElementById('at').textContent !== 'never');
    assert.equal(await shown(), 'serving');
    await survives(label, async () => {
      assert.equal(await button.innerText(), 'Drain this node');
      await button.click();
      await screen.waitForFunction(() => document.querySelector('[data-testid="drain-state"]').textContent.startsWith('draining'));
    });
    // A new viewer of a is redirected with a pass.
    const res = await fetch(`${a.base}/meeting/index.m3u8`, { redirect: 'manual' });
    assert.equal(res.status, 302);
    assert.ok(new URL(res.headers.get('location')).searchParams.get('pass'));
    // b and c no longer offer a as a backup.
    const masters = await Promise.all([masterOf(b), masterOf(c)]);
    assert.ok(masters.every((m) => !m.variants.some((u) => portOf(u) === String(a.http))), 'a drained node is offered by nobody');
    const drained = await pollUntil('the screen shows drained', async () => (await shown()).startsWith('drained'), { limitMs: 20_000 });
    console.log(`drain: the Backups screen shows "${await shown()}" ${drained.ms} ms after the watch ended`);
    await button.click();
    await screen.waitForFunction(() => document.querySelector('[data-testid="drain-state"]').textContent === 'serving');
  } finally {
    await api('DELETE');
    await screen.close();
  }
  const back = await pollUntil('a serves and is offered again', async () => {
    const own = await fetch(`${a.base}/meeting/index.m3u8`, { redirect: 'manual' });
    const m = await masterOf(b);
    return own.status === 200 && m.variants.some((u) => portOf(u) === String(a.http));
  }, { limitMs: 15_000 });
  console.log(`undrain: a serves and is offered again ${back.ms} ms later`);
  await waitProtected([a, b, c]);
}

test('hls.js defaults: a node drained from its Backups screen loses its viewers with no stall; undrain brings it back', { timeout: 150_000 * RUNS }, async () => {
  for (let run = 1; run <= RUNS; run++) await drainOnce(RUNS > 1 ? `drain #${run}` : 'drain');
});

test('hls.js defaults: kill -9 and a paused input still cost no stall', { timeout: 200_000 * RUNS }, async () => {
  const { a, b, c } = cluster.nodes;
  for (let run = 1; run <= RUNS; run++) {
    const n = RUNS > 1 ? ` #${run}` : '';
    try {
      await survives(`pause input${n}`, () => fetch(`${a.base}/api/streams/meeting/pause`, { method: 'POST' }));
    } finally {
      await fetch(`${a.base}/api/streams/meeting/resume`, { method: 'POST' });
    }
    try {
      await survives(`kill -9${n}`, () => a.kill9());
    } finally {
      if (!a.pid) await a.start();
      await waitProtected([a, b, c]);
    }
  }
});

test('the shipped player takes its timeouts from the playlist\'s target duration, or from ?target=', { timeout: 90_000 }, async () => {
  const { a } = cluster.nodes;
  const page = await browser.newPage();
  try {
    // A stream of 6-s segments: the media playlist says so (rewritten on its way).
    await page.route(/\/meeting\/mono\.m3u8/, async (route) => {
      const res = await route.fetch();
      const body = (await res.text()).replace(/#EXT-X-TARGETDURATION:\d+/, '#EXT-X-TARGETDURATION:6');
      await route.fulfill({ response: res, body });
    });
    await page.goto(`${a.base}/player?stream=meeting`);
    const derived = await pollUntil('the player reads the target duration', () => page.evaluate(() => window.__brdyun && window.__brdyun.timeoutMs === 7500), { limitMs: 30_000 });
    console.log(`player: timeouts 7500 ms for 6-s segments ${derived.ms} ms after opening`);
    await page.goto(`${a.base}/player?stream=meeting&target=1000`);
    await page.waitForFunction(() => window.__brdyun && window.__brdyun.currentTime > 1, null, { timeout: 30_000 });
    assert.equal(await page.evaluate(() => window.__brdyun.timeoutMs), 1250, '?target= fixes the timeouts');
  } finally {
    await page.close();
  }
});

/** ffmpeg's own User-Agent (`Lavf/<libavformat version>`), as the nodes see it. */
function ffmpegUserAgent() {
  const out = execFileSync('ffmpeg', ['-hide_banner', '-version'], { encoding: 'utf8' });
  const m = out.match(/libavformat\s+(\d+)\.\s*(\d+)\.\s*(\d+)/);
  return m ? `Lavf/${Number(m[1])}.${Number(m[2])}.${Number(m[3])}` : 'Lavf';
}

/** Runs ffmpeg on `url` for `seconds` of media; resolves with its exit code and stderr. */
function ffmpegDecodes(url, seconds, limitMs = 45_000) {
  return new Promise((resolve) => {
    const child = spawn('ffmpeg', ['-nostdin', '-v', 'error', '-i', url, '-t', String(seconds), '-f', 'null', '-'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
    child.on('exit', (code, signal) => { clearTimeout(timer); resolve({ code, signal, stderr }); });
  });
}

test('a player that reopens the way in after its node died plays on (ffmpeg, /watch)', { timeout: 150_000 }, async () => {
  const { a, b, c } = cluster.nodes;
  await waitProtected([a, b, c]);
  const ua = ffmpegUserAgent();
  const nodes = [a, b, c];
  const landsOn = async (entry) => {
    const res = await fetch(`${entry.base}/watch/meeting.m3u8`, { redirect: 'manual', headers: { 'User-Agent': ua } });
    assert.equal(res.status, 302, `the entry on ${entry.name} redirects`);
    const location = new URL(res.headers.get('location'), entry.base);
    return nodes.find((n) => String(n.http) === location.port);
  };
  // An entry that sends ffmpeg to another node, so that node can die under it.
  let entry = null;
  let serving = null;
  for (const e of nodes) {
    const on = await landsOn(e);
    if (on && on !== e) { entry = e; serving = on; break; }
  }
  assert.ok(entry, 'some entry sends ffmpeg to another node');
  const first = await ffmpegDecodes(`${entry.base}/watch/meeting.m3u8`, 4);
  assert.equal(first.code, 0, `ffmpeg plays through the entry on ${entry.name}:\n${first.stderr}`);
  try {
    await serving.kill9();
    const killedAt = Date.now();
    const moved = await pollUntil('the entry sends ffmpeg to a live node', async () => (await landsOn(entry)) !== serving, { limitMs: 20_000, everyMs: 100 });
    const again = await ffmpegDecodes(`${entry.base}/watch/meeting.m3u8`, 6);
    console.log(`way in: ${serving.name} killed; the entry on ${entry.name} sent ffmpeg elsewhere ${moved.ms} ms later; `
      + `ffmpeg reopened and decoded 6 s (exit ${again.code}) ${Date.now() - killedAt} ms after the kill`);
    assert.equal(again.code, 0, `ffmpeg plays on after reopening the entry:\n${again.stderr}`);
  } finally {
    if (!serving.pid) await serving.start();
    await waitProtected([a, b, c]);
  }
});

test('dash.js defaults: the live MPD is the same on every node, names every node as a service location, and plays with steering', { timeout: 120_000 }, async () => {
  const { a, b, c } = cluster.nodes;
  await waitProtected([a, b, c]);
  // The shared MPD is the same on every node; a switching player's names the nodes.
  const strip = (t) => t.replace(/<Period [\s\S]*$/, '');
  const fetchAll = () => Promise.all([a, b, c].map((n) => fetch(`${n.base}/meeting/index.mpd`, { headers: { 'User-Agent': 'Lavf/59.27.100' } }).then((r) => r.text())));
  // Fetched at once, away from a segment boundary (a node may be a few ms ahead).
  let plain = await fetchAll();
  for (let i = 0; i < 3 && strip(plain[1]) !== strip(plain[2]); i++) {
    await new Promise((r) => setTimeout(r, 700));
    plain = await fetchAll();
  }
  // b and c ran all along (a restarted in an earlier test: its window is refilling).
  assert.equal(strip(plain[2]), strip(plain[1]), 'the MPD header (availabilityStartTime, publishTime, ...) is the same on b and c');
  for (const text of plain) assert.match(text, /availabilityStartTime="1970-01-01T00:00:00(\.000)?Z"/);
  const mine = await fetch(`${a.base}/meeting/index.mpd`, { headers: { 'User-Agent': 'Mozilla/5.0 Chrome/120' } }).then((r) => r.text());
  assert.equal((mine.match(/<BaseURL serviceLocation=/g) || []).length, 3, mine.slice(0, 2000));
  assert.equal((mine.match(/<Location serviceLocation=/g) || []).length, 3, mine.slice(0, 2000));
  assert.match(mine, /<ContentSteering defaultServiceLocation="node-a" queryBeforeStart="false">http:\/\/127\.0\.0\.\d+:\d+\/steering\/meeting\?p=node-a,node-[bc],node-[bc]<\/ContentSteering>/);
  const page = await browser.newPage();
  try {
    const { pageErrors } = await openDashDefaults(page, `${a.base}/meeting/index.mpd`, 10);
    const state = await viewerState(page);
    console.log(`dash.js: played ${state.played.toFixed(1)} s, ${state.steering.length} steering manifest(s) from ports `
      + `${[...new Set(state.steering.map((x) => portOf(x.url)))].join(', ')}, fragments from ports ${[...new Set(state.fragments.map((f) => portOf(f.url)))].join(', ')}`);
    assert.deepEqual(state.errors, []);
    assert.deepEqual(pageErrors, []);
    assert.ok(state.steering.length > 0, 'dash.js asks the steering server');
    assert.ok(state.steering.every((x) => portOf(x.url) !== String(a.http)), 'never the node it plays from');
    assert.ok(state.fragments.every((f) => portOf(f.url) === String(a.http)), 'segments from its own node while all is well');
  } finally {
    await page.close();
  }
});

/**
 * Shaka's goal for a hung node: its MPD update in flight to the hung node waits out
 * Shaka's default connection timeout (10 s) before the retry goes to the next location
 * (the steering's), and Shaka has no reload event for inline MPD events; its buffer
 * (about 5 s) covers part of that.
 */
const SHAKA_HANG_GOAL_MS = 10_000;

/**
 * dash.js's goal for a hung node: usually no stall (its reloads move with the
 * steering). But a hang that catches a segment download in flight holds dash.js on that
 * URL: its default settings retry the same URL (four tries of 20 s), and it lets go only
 * when the segment leaves the MPD's time-shift buffer (the cluster's 60-s live window)
 * and it seeks to a segment it still can fetch, at the steered pathway. It must then
 * play on, with no fatal error.
 */
const DASH_HANG_GOAL_MS = 62_000;

for (const [name, player, hangGoalMs] of [['dash.js', true, DASH_HANG_GOAL_MS], ['Shaka', 'shaka', SHAKA_HANG_GOAL_MS]]) {
  test(`${name} defaults: a hung (SIGSTOP) or killed (kill -9) serving node costs no fatal error`, { timeout: 300_000 * RUNS }, async () => {
    const { a, b, c } = cluster.nodes;
    for (let run = 1; run <= RUNS; run++) {
      const n = RUNS > 1 ? ` #${run}` : '';
      try {
        await survives(`${name} SIGSTOP${n}`, () => a.hang(), {
          dash: player, stallGoalMs: hangGoalMs, watchMs: WATCH_MS, recoverWithinMs: hangGoalMs + 10_000,
        });
      } finally {
        a.resume();
      }
      await waitProtected([a, b, c]);
      try {
        await survives(`${name} kill -9${n}`, () => a.kill9(), { dash: player });
      } finally {
        if (!a.pid) await a.start();
        await waitProtected([a, b, c]);
      }
    }
  });
}
