// Does the shipped player honour the back-pressure answer? Starts the demo (release
// build), plays node a in headless Chromium, then adds a fault rule that sheds every
// CRITICAL request of browsers for 8 s (FIT-1: the answer is the same as a real shed),
// and prints what the player did (window.__brdyun.backPressure), how many requests the
// rule refused, and whether playback resumed after the rule expired. Bounded (~45 s).
//
//   cargo build --release && (cd e2e && npm ci) && node bench/shed/player_backpressure.mjs
//
// Exit status 1 when the player hammered the node (more refused requests than the
// answers allow) or did not resume.
import { startDemo, waitFor200, launchBrowser } from '../../e2e/lib/cluster.mjs';

const PORT = Number(process.env.E2E_PORT || 18180);
const base = `http://127.0.0.1:${PORT}`;
const RULE_SECONDS = 8;

const demo = await startDemo(PORT);
let browser;
let failed = false;
try {
  await waitFor200(`${base}/meeting/index.m3u8`);
  browser = await launchBrowser();
  const page = await browser.newPage();
  await page.goto(`${base}/player?stream=meeting`);
  await page.waitForFunction(() => window.__brdyun && window.__brdyun.currentTime > 1, null, { timeout: 30_000 });

  const added = await fetch(`${base}/api/fault-rules`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ min_priority: 70, max_priority: 99, devices: ['browser'], duration_seconds: RULE_SECONDS }),
  });
  const { id } = await added.json();
  const startedAt = Date.now();
  const timeline = [];
  let injected = 0;
  while (Date.now() - startedAt < (RULE_SECONDS + 12) * 1000) {
    await new Promise((r) => setTimeout(r, 1000));
    const stats = await page.evaluate(() => ({ t: window.__brdyun.currentTime, bp: { ...window.__brdyun.backPressure }, fatal: window.__brdyun.fatalErrors.length }));
    const rules = await (await fetch(`${base}/api/fault-rules`)).json();
    const rule = rules.rules.find((r) => r.id === id);
    if (rule) injected = rule.injected;
    timeline.push({ s: Math.round((Date.now() - startedAt) / 1000), currentTime: Number(stats.t.toFixed(1)), ...stats.bp, lastAdvice: JSON.stringify(stats.bp.lastAdvice), fatal: stats.fatal, injected });
  }
  console.table(timeline);
  const last = timeline[timeline.length - 1];
  const atExpiry = timeline.find((row) => row.s >= RULE_SECONDS) || last;
  const resumed = last.currentTime > atExpiry.currentTime + 3;
  // Three request classes (manifest, playlist, fragment); each may send its first try
  // plus maxRetries (at most 5) per back-off episode, and a reload starts new episodes.
  console.log(JSON.stringify({ refusedByRule: injected, answersSeen: last.answers, retries: last.retries, gaveUp: last.gaveUp, resumed }));
  if (!resumed) { console.error('playback did not resume after the rule expired'); failed = true; }
  if (last.answers === 0) { console.error('the player never saw a back-pressure answer'); failed = true; }
  if (injected > 60) { console.error(`the node refused ${injected} requests in ${RULE_SECONDS} s: the player hammered it`); failed = true; }
} finally {
  await browser?.close();
  await demo.stop();
}
process.exit(failed ? 1 : 0);
