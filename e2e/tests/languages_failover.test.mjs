// The viewer's language survives a failover: an MC feeds the built-in meeting with its
// two languages (the floor, a 440 Hz tone, and Spanish, a 750 Hz tone) to nodes a, b and
// c, one OTT group. The player page (hls.js) on node a shows a language menu; the test
// picks Spanish there, hears it (Web Audio on the <video>), and then node a is killed
// (kill -9) or hung (SIGSTOP). The player moves to a backup, whose copy of the variants
// names its own audio group with the same languages: playback goes on within the
// failover goal and the viewer still hears Spanish, from b or c.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser } from '../lib/cluster.mjs';
import { startCluster, waitProtected, openPage } from '../lib/processes.mjs';
import { listen, hear } from '../lib/tone.mjs';

const SPANISH_HZ = 750;
/** The failover goal (docs/ott-redundancy.md): one target duration + 1 s, with the
 * same slack for a shared 2-core machine as the failover tests. */
const STALL_LIMIT_MS = 2_000 + 1_000 + 1_000;
const WATCH_MS = 20_000;

let cluster;
let browser;

before(async () => {
  cluster = await startCluster({ languages: true });
  const { a, b, c } = cluster.nodes;
  await waitProtected([a, b, c]);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await cluster?.stopAll();
});

const portOf = (url) => (url ? new URL(url).port : null);

/** Plays from node a with Spanish picked in the menu, fails a with `fail()`, and checks
 * the player plays on from b or c, in Spanish. */
async function keepsSpanish(label, fail) {
  const { a, b, c } = cluster.nodes;
  await waitProtected([a, b, c]);
  const page = await browser.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  try {
    await openPage(page, `${a.base}/player?stream=meeting`, () => !!window.__brdyun && !!window.Hls);
    await page.waitForFunction(() => window.__brdyun.currentTime >= 3 && window.__brdyun.languages.length === 2,
      null, { timeout: 40_000 });
    await listen(page, '#video');
    const languages = await page.evaluate(() => window.__brdyun.languages);
    assert.deepEqual(languages, [{ name: 'English', lang: 'en' }, { name: 'Español', lang: 'es' }]);
    assert.equal(await page.locator('#languages').isVisible(), true, 'the language menu is shown');
    await page.selectOption('#language', '1');
    await hear(page, SPANISH_HZ, 'Spanish picked from the menu');
    await page.evaluate(() => {
      const video = document.getElementById('video');
      const s = window.__brdyun;
      s.longestStallMs = 0;
      s.maxFrozenMs = 0;
      let last = video.currentTime;
      let since = performance.now();
      setInterval(() => {
        const now = performance.now();
        if (video.currentTime !== last) {
          last = video.currentTime;
          since = now;
        }
        s.maxFrozenMs = Math.max(s.maxFrozenMs, now - since);
      }, 50);
    });
    const before = await page.evaluate(() => ({ ...window.__brdyun }));
    assert.equal(portOf(before.lastFragUrl), String(a.http), 'playing from node a before the failure');
    await fail();
    await page.waitForTimeout(WATCH_MS);
    const after = await page.evaluate(() => ({ ...window.__brdyun }));
    const heardAfterMs = await hear(page, SPANISH_HZ, `Spanish after ${label}`, 5_000);
    const frozen = Math.round(after.maxFrozenMs);
    console.log(`language failover ${label}: video clock frozen at most ${frozen} ms, longest stall `
      + `${Math.round(after.longestStallMs)} ms, played ${(after.currentTime - before.currentTime).toFixed(1)} s of `
      + `${WATCH_MS / 1000}, language ${JSON.stringify(after.language)} (put back ${after.languageRestored} time(s)), `
      + `Spanish heard ${heardAfterMs} ms into the check, now from ${after.lastFragUrl}; `
      + `errors after the failure: ${JSON.stringify(after.errors.slice(before.errors.length))}`);
    assert.deepEqual(after.fatalErrors, []);
    assert.deepEqual(pageErrors, []);
    assert.ok([String(b.http), String(c.http)].includes(portOf(after.lastFragUrl)),
      `the last fragment came from b or c, not ${after.lastFragUrl}`);
    assert.deepEqual(after.language, { name: 'Español', lang: 'es' }, 'the picked language is kept');
    assert.ok(frozen <= STALL_LIMIT_MS, `video clock frozen ${frozen} ms, over ${STALL_LIMIT_MS} ms`);
  } finally {
    await page.close();
  }
}

test('hls.js keeps the picked language through kill -9 of its node', { timeout: 150_000 }, async () => {
  const { a, b, c } = cluster.nodes;
  try {
    await keepsSpanish('kill -9', () => a.kill9());
  } finally {
    if (!a.pid) await a.start();
    await waitProtected([a, b, c]);
  }
});

test('hls.js keeps the picked language through its node hanging (SIGSTOP)', { timeout: 150_000 }, async () => {
  const { a, b, c } = cluster.nodes;
  try {
    await keepsSpanish('SIGSTOP', () => a.hang());
  } finally {
    a.resume();
    await waitProtected([a, b, c]);
  }
});
