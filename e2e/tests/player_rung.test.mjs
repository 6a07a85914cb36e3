// A rung the viewer picked, across a failover (OTT-PROT-1; docs/ott-redundancy.md#what-a-site-should-set):
// hls.js plays the demo ladder from node a (host name node-a.localhost), the viewer
// picks the 240p rung, a is killed (kill -9) and hls.js moves to a backup's pathway,
// whose levels replace a's. Plain hls.js (defaults) may come back in auto and forget
// the pick; with what a site should add (the shipped player page's LEVELS_UPDATED
// handler, `keepRung`), it plays on at 240p. Runs with PLAYER_MATRIX=full
// (bench/player_matrix.py): an encoded ladder is too heavy for the suite's few minutes,
// and e2e/tests/ladder_failover.test.mjs checks the shipped page in the suite.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser } from '../lib/cluster.mjs';
import { startCluster, waitProtected } from '../lib/processes.mjs';
import { hostOf } from '../lib/players/matrix.mjs';
import { openPlayer, viewerState } from '../lib/players/site.mjs';

const RUNGS = 3;
const WATCH_MS = 20_000;
const run = process.env.PLAYER_MATRIX === 'full';

let cluster;
let browser;

before(async () => {
  if (!run) return;
  cluster = await startCluster({ ladder: true, announce: (name, port) => [`http://${hostOf(name)}:${port}`] });
  const { a, b, c } = cluster.nodes;
  await waitProtected([a, b, c], 90_000, RUNGS);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await cluster?.stopAll();
});

/** Plays a, picks 240p, kills a; returns the rung played from the backup and whether the pick held. */
async function pickThenKill(keepRung) {
  const { a, b, c } = cluster.nodes;
  await waitProtected([a, b, c], 60_000, RUNGS);
  const page = await browser.newPage();
  try {
    const { media } = await openPlayer(page, 'hlsjs', `http://${hostOf('a')}:${a.http}/meeting/index.m3u8`, { keepRung });
    const rung = await page.evaluate(() => window.__hls.levels.findIndex((l) => l.height === 240));
    assert.ok(rung >= 0, 'the ladder has a 240p rung');
    await page.evaluate((i) => window.__pick(i), rung);
    await page.waitForFunction(() => window.__hls.levels[window.__viewer.level]?.height === 240, null, { timeout: 30_000 });
    await page.waitForTimeout(4_000);
    const failedAt = Date.now();
    await a.kill9();
    await page.waitForTimeout(WATCH_MS);
    const end = await viewerState(page);
    const after = await page.evaluate(() => ({
      height: window.__hls.levels[window.__hls.currentLevel]?.height,
      manual: window.__hls.manualLevel,
      auto: window.__hls.autoLevelEnabled,
    }));
    const fromBackup = media.filter((m) => m.at > failedAt && m.host !== `${hostOf('a')}:${a.http}`);
    const rungs = [...new Set(fromBackup.map((m) => (m.url.match(/\/meeting\/(\d+p)\//) || [null, 'source'])[1]))];
    const row = `hls.js ${keepRung ? 'with the pick put back' : 'defaults'} × kill -9, 240p picked: after the failover `
      + `${after.auto ? 'auto' : `manual level ${after.manual}`}, playing ${after.height}p, rungs fetched from the backup ${rungs.join(', ')}, `
      + `longest stall ${Math.round(end.longestStallMs)} ms, fatal ${end.fatalErrors.length}`;
    console.log(`rung ${row}`);
    return { after, rungs, end, fromBackup };
  } finally {
    await page.close();
    if (!a.pid) await a.start();
  }
}

test('hls.js defaults: a picked rung after a failover (measured, the pick may be lost)', { timeout: 240_000, skip: !run && 'PLAYER_MATRIX=full' }, async () => {
  const { end, fromBackup } = await pickThenKill(false);
  assert.deepEqual(end.fatalErrors, []);
  assert.ok(fromBackup.length > 0, 'plays on from a backup');
});

test('hls.js with the pick put back after LEVELS_UPDATED keeps the 240p rung on the backup', { timeout: 240_000, skip: !run && 'PLAYER_MATRIX=full' }, async () => {
  const { after, rungs, end } = await pickThenKill(true);
  assert.deepEqual(end.fatalErrors, []);
  assert.equal(after.height, 240, 'plays 240p from the backup');
  assert.equal(after.auto, false, 'the pick holds: hls.js is not back in auto');
  assert.equal(rungs.at(-1), '240p', `the last segments from the backup are 240p: ${rungs}`);
});
