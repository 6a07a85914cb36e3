// A site whose player does not switch (OTT-GRP-2, OTT-PROT-1): hls.js playing one
// media playlist (`mono.m3u8`) of node a, as a site embeds a single playlist, with the
// platform's way in (`/watch/meeting.m3u8` on node b) to reopen when playback dies. After
// node a is killed (kill -9), the player reopens the way in and plays again from a node
// that lives (docs/ott-redundancy.md, "The way in").
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser } from '../lib/cluster.mjs';
import { startMatrixCluster, settle, hostOf } from '../lib/players/matrix.mjs';
import { openPlayer, viewerState, resetStalls } from '../lib/players/site.mjs';

/** How long the viewer may be without picture: hls.js's own retries, then the reopen. */
const RECOVER_MS = 30_000;

let cluster;
let browser;

before(async () => {
  cluster = await startMatrixCluster();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await cluster?.stopAll();
});

test('hls.js playing one media playlist reopens the way in and plays again after its node is killed', { timeout: 150_000 }, async () => {
  const { a, b } = cluster.nodes;
  await settle(cluster);
  const aHost = `${hostOf('a')}:${a.http}`;
  const wayIn = `http://${hostOf('b')}:${b.http}/watch/meeting.m3u8`;
  const page = await browser.newPage();
  try {
    const { media } = await openPlayer(page, 'hlsjs', `http://${aHost}/meeting/mono.m3u8`, { reopen: [wayIn] });
    assert.equal(media.at(-1)?.host, aHost, 'playing from node a');
    const before = await viewerState(page);
    await resetStalls(page);
    const killedAt = Date.now();
    await a.kill9();
    let now = before;
    while (Date.now() - killedAt < RECOVER_MS + 15_000) {
      await page.waitForTimeout(1_000);
      now = await viewerState(page);
      if (now.reopened > 0 && now.played - before.played >= 8 && now.frozenMs < 1_000) break;
    }
    const fromLiving = media.filter((m) => m.at > killedAt && m.host !== aHost && m.status === 200);
    console.log(`reopen: reopened ${now.reopened}×, first segment from a living node ${fromLiving.length ? fromLiving[0].at - killedAt : '-'} ms after the kill, `
      + `longest stall ${Math.round(now.longestStallMs)} ms, played ${(now.played - before.played).toFixed(1)} s`);
    assert.ok(now.reopened > 0, 'the site reopened the way in');
    assert.ok(fromLiving.length > 0, 'segments came from a node that lives');
    assert.ok(now.played - before.played >= 8, `played again: ${JSON.stringify(now)}`);
    assert.ok(fromLiving[0].at - killedAt < RECOVER_MS, `back within ${RECOVER_MS} ms`);
  } finally {
    await page.close();
    await a.start();
  }
});
