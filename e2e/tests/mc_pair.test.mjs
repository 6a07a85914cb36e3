// An MC pair on etcd with a dual publish (docs/mc-pair.md): hls.js with its
// default settings plays the meeting from a node while the MC that owns the meeting's
// timeline is killed (kill -9). The node switches to the other MC's relay, which
// carries the same timeline on: the viewer sees no stall, and the node's playlist has
// no discontinuity and no PDT step. Figures are printed for docs/mc-pair.md.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser } from '../lib/cluster.mjs';
import { pollUntil } from '../lib/processes.mjs';
import { startMcPair, meetingInputs } from '../lib/mc_pair.mjs';
import { openDefaultsPlayer, viewerState, resetViewerStalls } from '../lib/defaults_player.mjs';

/** How long playback is watched after the kill. */
const WATCH_MS = 20_000;
/** A stall a viewer would not call one; the goal is none. */
const STALL_LIMIT_MS = 500;

let pair;
let browser;

before(async () => {
  pair = await startMcPair();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await pair?.stopAll();
});

/** PDT (ms) and duration (ms) of every segment of a media playlist, with discontinuities. */
function entries(text) {
  const out = [];
  let pdt = null;
  let dur = null;
  let disc = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('#EXT-X-PROGRAM-DATE-TIME:')) pdt = Date.parse(line.slice(25));
    else if (line.startsWith('#EXTINF:')) dur = Math.round(parseFloat(line.slice(8)) * 1000);
    else if (line === '#EXT-X-DISCONTINUITY') disc = true;
    else if (line && !line.startsWith('#')) {
      out.push({ uri: line, pdt, dur, disc });
      disc = false;
    }
  }
  return out;
}

test('hls.js plays through the death of the MC that owns the timeline', async () => {
  const { a } = pair.nodes;
  // Which MC owns the timeline: the one cutting from its own input (publish is index
  // 1, the UDP feed 2); the other follows its relay (index 0).
  const { value: roles } = await pollUntil('one MC owning and one following', async () => {
    const found = {};
    for (const [name, mc] of Object.entries(pair.mcs)) {
      const inputs = await meetingInputs(mc.base).catch(() => null);
      if (inputs?.active >= 1) found.owner = name;
      if (inputs?.active === 0) found.follower = name;
    }
    return found.owner && found.follower ? found : null;
  }, { limitMs: 60_000 });
  await pollUntil('both MC relays live on the node', async () => {
    const inputs = await meetingInputs(a.base).catch(() => null);
    return inputs?.inputs?.length === 2 && inputs.inputs.every((i) => i.state === 'live');
  }, { limitMs: 30_000 });

  const page = await browser.newPage();
  const { pageErrors } = await openDefaultsPlayer(page, a, `${a.base}/meeting/index.m3u8`);
  await resetViewerStalls(page);
  const before = await viewerState(page);
  const killedAt = Date.now();
  await pair.mcs[roles.owner].kill9();
  await new Promise((r) => setTimeout(r, WATCH_MS));
  const after = await viewerState(page);
  const media = await (await fetch(`${a.base}/meeting/mono.m3u8`)).text();
  const survivor = Object.entries(pair.mcs).find(([name]) => name !== roles.owner)[1];
  const survivorMedia = await (await fetch(`${survivor.base}/meeting/mono.m3u8`)).text();
  const list = entries(media);
  const steps = [];
  for (let i = 1; i < list.length; i += 1) {
    if (list[i].disc) continue;
    steps.push(list[i].pdt - (list[i - 1].pdt + list[i - 1].dur));
  }
  const figures = {
    killed: roles.owner,
    playedSeconds: +(after.played - before.played).toFixed(1),
    stalls: after.stalls,
    longestStallMs: after.longestStallMs,
    maxFrozenMs: after.maxFrozenMs,
    fatalErrors: after.fatalErrors.length,
    discontinuities: list.filter((e) => e.disc).length,
    largestPdtStepMs: Math.max(0, ...steps.map(Math.abs)),
    watchedMs: Date.now() - killedAt,
  };
  console.log(`mc pair failover: ${JSON.stringify(figures)}`);
  await page.close();
  assert.deepEqual(pageErrors, []);
  assert.equal(figures.fatalErrors, 0);
  assert.ok(figures.maxFrozenMs <= STALL_LIMIT_MS, `the video froze ${figures.maxFrozenMs} ms`);
  assert.ok(figures.playedSeconds >= (WATCH_MS / 1000) - 2, `played ${figures.playedSeconds} s in ${WATCH_MS} ms`);
  assert.equal(figures.discontinuities, 0, media);
  assert.ok(figures.largestPdtStepMs <= 1, `a PDT step of ${figures.largestPdtStepMs} ms:\n${media}\nthe surviving MC:\n${survivorMedia}`);
});
