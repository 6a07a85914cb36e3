// Private meetings with real players: the MC mints a viewer token for the
// private meeting `board`; hls.js (default settings) plays it from node a with the token
// in its URL — every later request carries the session the node wrote into the
// playlists — and plays on from a backup when a is killed (the backup accepts the
// pass and the session); dash.js plays its MPD; without a token the node refuses.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser } from '../lib/cluster.mjs';
import { startCluster, pollUntil, masterOf } from '../lib/processes.mjs';
import { openDefaultsPlayer, openDashDefaults, viewerState } from '../lib/defaults_player.mjs';

let cluster;
let browser;

before(async () => {
  cluster = await startCluster({ privateMeeting: true });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await cluster?.stopAll();
});

/** A viewer token for `board` from the MC's token API. */
async function mint(viewer) {
  const res = await fetch(`http://127.0.0.1:${cluster.mcPort}/api/meetings/board/viewer-tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ viewer, ttl_seconds: 600 }),
  });
  assert.equal(res.status, 201);
  return (await res.json()).token;
}

const portOf = (url) => new URL(url).port;

test('hls.js plays a private meeting with its token and plays on from a backup when its node dies', { timeout: 180_000 }, async () => {
  const { a, b, c } = cluster.nodes;
  const token = await mint('alice');
  const refused = await fetch(`${a.base}/board/index.m3u8`);
  assert.equal(refused.status, 403);
  assert.equal((await refused.json()).code, 113001);
  // a offers two backups, each variant with a pass and the viewer's session.
  const master = await pollUntil('a offers board with two backups', async () => {
    const m = await masterOf(a, 'board', 2_000, `index.m3u8?access_token=${token}`);
    return m && m.variants.length === 3 && m;
  }, { limitMs: 60_000 });
  assert.ok(master.value.variants.every((u) => new URL(u).searchParams.get('session')), master.value.text);
  assert.ok(master.value.variants.slice(1).every((u) => new URL(u).searchParams.get('pass')), master.value.text);
  const page = await browser.newPage();
  try {
    await openDefaultsPlayer(page, a, `${a.base}/board/index.m3u8?access_token=${token}`);
    const before = await viewerState(page);
    assert.ok(before.fragments.length > 0);
    assert.ok(before.fragments.every((f) => new URL(f.url).searchParams.get('session')), 'every fragment request carries the session');
    assert.deepEqual(before.fatalErrors, []);
    const killedAt = Date.now();
    await a.kill9();
    await page.waitForFunction((t) => window.__viewer.fragments.some((f) => f.at > t && !f.url.includes(`:${location.port}`)), killedAt, { timeout: 30_000 });
    await page.waitForTimeout(8_000);
    const after = await viewerState(page);
    const fromBackup = after.fragments.filter((f) => f.at > killedAt);
    console.log(`private meeting: ${fromBackup.length} fragment(s) from ports ${[...new Set(fromBackup.map((f) => portOf(f.url)))].join(', ')} after a was killed, `
      + `longest stall ${Math.round(after.longestStallMs)} ms, played ${(after.played - before.played).toFixed(1)} s`);
    assert.ok(fromBackup.length > 0 && fromBackup.every((f) => [String(b.http), String(c.http)].includes(portOf(f.url))),
      'the backups serve the viewer');
    assert.deepEqual(after.fatalErrors, []);
    assert.ok(after.played - before.played > 5, 'it plays on');
  } finally {
    await page.close();
    if (!a.pid) await a.start();
  }
});

test('dash.js plays a private meeting with its token; every segment request carries the session', { timeout: 120_000 }, async () => {
  const { b } = cluster.nodes;
  const token = await mint('bob');
  await pollUntil('b serves board', async () => (await fetch(`${b.base}/board/index.mpd?access_token=${token}`)).status === 200, { limitMs: 60_000 });
  const page = await browser.newPage();
  try {
    const { pageErrors } = await openDashDefaults(page, `${b.base}/board/index.mpd?access_token=${token}`);
    const state = await viewerState(page);
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(state.fatalErrors, []);
    assert.ok(state.fragments.length > 0);
    assert.ok(state.fragments.every((f) => new URL(f.url).searchParams.get('session')), JSON.stringify(state.fragments.slice(0, 3)));
    console.log(`dash.js played the private meeting ${state.played.toFixed(1)} s`);
  } finally {
    await page.close();
  }
});
