// The demo plays in a real browser: hls.js in headless Chromium watches node-a (which
// ingests the meeting) and node-b (which pulls it) for 20 s each, with no fatal error,
// then a catch-up period from the archive.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startDemo, waitFor200, launchBrowser } from '../lib/cluster.mjs';

const PORT = Number(process.env.E2E_PORT || 18080);
let demo;
let browser;

before(async () => {
  demo = await startDemo(PORT);
  await waitFor200(`http://127.0.0.1:${PORT}/meeting/index.m3u8`);
  await waitFor200(`http://127.0.0.1:${PORT + 1}/meeting/index.m3u8`);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await demo?.stop();
});

for (const node of [0, 1]) {
  test(`hls.js plays the demo meeting from node ${'ab'[node]} for 20 s`, { timeout: 90_000 }, async () => {
    const page = await browser.newPage();
    const consoleErrors = [];
    page.on('pageerror', (e) => consoleErrors.push(String(e)));
    await page.goto(`http://127.0.0.1:${PORT + node}/player?stream=meeting`);
    await page.waitForFunction(() => window.__brdyun && window.__brdyun.currentTime > 1, null, { timeout: 30_000 });
    const start = await page.evaluate(() => window.__brdyun.currentTime);
    await page.waitForTimeout(20_000);
    const stats = await page.evaluate(() => window.__brdyun);
    await page.close();
    assert.deepEqual(stats.fatalErrors, [], `fatal errors: ${stats.fatalErrors}`);
    assert.deepEqual(consoleErrors, []);
    const played = stats.currentTime - start;
    assert.ok(played > 17, `played only ${played.toFixed(1)} s of 20 (stats ${JSON.stringify(stats)})`);
  });
}

// Catch-up (TS, fMP4 and the ladder): after the live tests
// the nodes have recorded close to a minute of the meeting; hls.js plays a 30-second
// archive period: the MPEG-TS one as the recorded ladder (a master of the source and
// both rungs, each a VOD playlist), the fMP4 one derived from the source's archive.
for (const [kind, file] of [['MPEG-TS ladder', 'index'], ['fMP4', 'fmp4']]) {
  test(`hls.js plays a catch-up period from the archive (${kind})`, { timeout: 90_000 }, async () => {
    const from = Math.floor(Date.now() / 1000) - 40;
    const src = `/meeting/${file}-${from}-30.m3u8`;
    const base = `http://127.0.0.1:${PORT + 1}`;
    const playlist = await waitFor200(base + src);
    let media = playlist;
    if (file === 'index') {
      const uris = playlist.split('\n').filter((l) => l && !l.startsWith('#'));
      assert.deepEqual(uris, [`mono-${from}-30.m3u8`, `240p/mono-${from}-30.m3u8`, `144p/mono-${from}-30.m3u8`], playlist);
      media = await waitFor200(`${base}/meeting/240p/mono-${from}-30.m3u8`);
    }
    assert.match(media, /#EXT-X-PLAYLIST-TYPE:VOD/);
    assert.match(media, /#EXT-X-ENDLIST/);
    if (kind === 'fMP4') assert.match(playlist, /#EXT-X-MAP:URI=/);
    const page = await browser.newPage();
    await page.goto(`${base}/player?stream=meeting&src=${encodeURIComponent(src)}`);
    await page.waitForFunction(() => window.__brdyun && window.__brdyun.currentTime > 1, null, { timeout: 30_000 });
    await page.waitForTimeout(12_000);
    const stats = await page.evaluate(() => window.__brdyun);
    await page.close();
    assert.deepEqual(stats.fatalErrors, [], `fatal errors: ${stats.fatalErrors}`);
    assert.ok(stats.currentTime > 10, `played only ${stats.currentTime.toFixed(1)} s (stats ${JSON.stringify(stats)})`);
    if (file === 'index') assert.equal(stats.levels.length, 3, `the recorded ladder: ${JSON.stringify(stats.levels)}`);
  });
}
