// Failover of an ABR ladder mid-play: an MC encodes the built-in
// meeting into the demo's ladder (source 640x360, 240p, 144p) and nodes a, b and c
// deliver it as one OTT group, each master playlist repeating the whole ladder for each
// backup. hls.js on the shipped player page watches the 240p rung from node a while a is
// killed (kill -9) or hung (SIGSTOP): it plays on from b or c at the same rung, with no
// fatal error. Measured figures are printed for docs/ladder.md.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser } from '../lib/cluster.mjs';
import { startCluster, waitProtected, masterOf, openPage, pollUntil, servesPlayer } from '../lib/processes.mjs';

/** The rungs of the demo ladder. */
const RUNGS = 3;
/** The goal for a failover stall (one target duration + 1 s), and CI slack. */
const STALL_LIMIT_MS = 2_000 + 1_000 + 1_000;
/** How long playback is watched after the failure. */
const WATCH_MS = 25_000;

let cluster;
let browser;

before(async () => {
  cluster = await startCluster({ ladder: true });
  const { a, b, c } = cluster.nodes;
  await waitProtected([a, b, c], 90_000, RUNGS);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await cluster?.stopAll();
});

const portOf = (url) => (url ? new URL(url).port : null);
const stats = (page) => page.evaluate(() => ({ ...window.__brdyun }));

/**
 * Plays the 240p rung from node a, calls `fail()`, watches WATCH_MS and checks that
 * playback went on from b or c at the 240p rung.
 */
async function keepsItsRung(label, fail) {
  const { a, b, c } = cluster.nodes;
  await waitProtected([a, b, c], 45_000, RUNGS);
  const direct = await masterOf(a);
  assert.equal(direct.variants.length, 3 * RUNGS, `a offers the ladder from itself and two backups:\n${direct.text}`);
  const page = await browser.newPage();
  try {
    await openPage(page, `${a.base}/player?stream=meeting`, () => !!window.__brdyun && !!window.Hls);
    await page.waitForFunction(() => window.__brdyun.currentTime >= 3 && window.__brdyun.levels.length > 0, null, { timeout: 40_000 });
    const { levels } = await stats(page);
    assert.equal(levels.length, RUNGS, `one level per rung: ${JSON.stringify(levels)}`);
    const rung = levels.findIndex((l) => l.height === 240);
    await page.selectOption('#rung', String(rung));
    await page.waitForFunction((want) => window.__brdyun.level === want
      && /\/meeting\/240p\//.test(window.__brdyun.lastFragUrl || ''), rung, { timeout: 30_000 });
    await page.waitForTimeout(3_000);
    const atFailure = await stats(page);
    assert.equal(portOf(atFailure.lastFragUrl), String(a.http), 'playing from node a before the failure');
    await page.evaluate(() => { window.__brdyun.stalls = 0; window.__brdyun.longestStallMs = 0; });
    await fail();
    await page.waitForTimeout(WATCH_MS);
    const atEnd = await stats(page);
    const played = atEnd.currentTime - atFailure.currentTime;
    const stall = Math.round(atEnd.longestStallMs);
    console.log(`ladder failover ${label}: longest stall ${stall} ms, ${atEnd.stalls} stall(s), `
      + `played ${played.toFixed(1)} s of ${WATCH_MS / 1000}, level ${atEnd.level} `
      + `(${atEnd.levels[atEnd.level]?.height}p, pick restored ${atEnd.rungRestored}x), fatal errors ${atEnd.fatalErrors.length}, now from ${atEnd.lastFragUrl}`);
    assert.deepEqual(atEnd.fatalErrors, [], 'no fatal hls.js error');
    assert.ok(played >= WATCH_MS / 1000 - 7, `played only ${played.toFixed(1)} s after the failure`);
    assert.ok([String(b.http), String(c.http)].includes(portOf(atEnd.lastFragUrl)),
      `the last fragment came from b or c, not ${atEnd.lastFragUrl}`);
    assert.match(atEnd.lastFragUrl, /\/meeting\/240p\/seg-\d+\.ts/, 'the backup plays the same rung');
    assert.equal(atEnd.levels[atEnd.level]?.height, 240, `still the 240p rung: ${JSON.stringify(atEnd)}`);
    assert.ok(stall <= STALL_LIMIT_MS, `longest stall ${stall} ms over ${STALL_LIMIT_MS} ms`);
  } finally {
    await page.close();
  }
}

test('hls.js keeps its rung when its node is killed (kill -9) and plays on from a backup', { timeout: 180_000 }, async () => {
  const { a, b, c } = cluster.nodes;
  try {
    await keepsItsRung('kill -9', () => a.kill9());
  } finally {
    if (!a.pid) await a.start();
    await waitProtected([a, b, c], 60_000, RUNGS);
  }
});

test('hls.js keeps its rung when its node hangs (SIGSTOP) and plays on from a backup', { timeout: 180_000 }, async () => {
  const { a, b, c } = cluster.nodes;
  try {
    await keepsItsRung('SIGSTOP', () => a.hang());
  } finally {
    a.resume();
    await pollUntil('a serves its player page after SIGCONT', () => servesPlayer(a), { limitMs: 30_000, everyMs: 200 });
  }
});
