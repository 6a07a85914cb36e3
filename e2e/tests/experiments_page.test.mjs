// The Experiments page in headless Chromium (EXP-1, EXP-2): the demo's node a
// gets a definition over the admin API and starts it; the shipped player page plays and
// sends its start beacon; 300 members' beacons fill both groups; the page shows the run
// with its time left and the per-device KPI table, and its "Start now" button starts a
// second definition. Then a run that sheds every TV request of its experiment group
// crosses the CRITICAL-failure guardrail: the node's tick aborts it, and the page shows
// it in the history as hurting smart TVs, with the regression alert.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startDemo, waitFor200, launchBrowser } from '../lib/cluster.mjs';

const PORT = Number(process.env.E2E_PORT || 18080) + 100;
const BASE = `http://127.0.0.1:${PORT}`;
let demo;
let browser;

/** A daily start half a day from now: never inside its 45-minute window while the test
 * runs, so the node's scheduler never starts a run the test means to start itself. */
function farFromNow() {
  const at = new Date(Date.now() + 12 * 3600 * 1000);
  return `${String(at.getUTCHours()).padStart(2, '0')}:${String(at.getUTCMinutes()).padStart(2, '0')}`;
}

/** Sheds the DEGRADED range (30-59) for 10 % of browser members; 10 % control. */
function definition(id) {
  return {
    id,
    priorities: { min: 30, max: 59 },
    control_share_bp: 1000,
    experiment_share_bp: 1000,
    duration_minutes: 45,
    devices: ['browser'],
    schedule: { daily_at: farFromNow() },
    verdict: { alpha: 0.05, min_samples: 10, min_relative_change: 0.1 },
  };
}

async function api(method, path, body) {
  const res = await fetch(BASE + path, {
    method,
    headers: body ? { 'Content-Type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}

before(async () => {
  demo = await startDemo(PORT);
  await waitFor200(`${BASE}/meeting/index.m3u8`);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await demo?.stop();
});

test('the Experiments page shows a started run and its per-device table', { timeout: 120_000 }, async () => {
  assert.equal((await api('POST', '/api/experiments', definition('e2e-degraded'))).status, 201);
  assert.equal((await api('POST', '/api/experiments', definition('e2e-later'))).status, 201);
  const started = await api('POST', '/api/experiments/e2e-degraded/start');
  assert.equal(started.status, 200, JSON.stringify(started.json));
  const run = started.json.run;
  assert.match(run, /^e2e-degraded@\d+$/);

  // The shipped player plays and reports its start (time to first frame).
  const player = await browser.newPage();
  await player.goto(`${BASE}/player?stream=meeting`);
  await player.waitForFunction(() => window.__brdyun && window.__brdyun.beacons.sent >= 1, null, { timeout: 45_000 });
  const stats = await player.evaluate(() => window.__brdyun);
  await player.close();
  assert.equal(stats.beacons.events[0], 'start', JSON.stringify(stats.beacons));

  // 300 members start, with times to first frame around 1 s.
  for (let i = 0; i < 300; i += 1) {
    const res = await fetch(`${BASE}/telemetry/kpi`, {
      method: 'POST',
      body: JSON.stringify({ session: `s-${i}`, member: `m-${i}`, device: 'browser', event: 'start', ttff_ms: 800 + (i % 7) * 60 }),
    });
    assert.equal(res.status, 204);
  }
  const status = (await api('GET', '/api/experiments')).json;
  const kpis = status.running[0].kpis;
  const control = kpis.control.browser.start_attempts;
  const experiment = kpis.experiment.browser.start_attempts;
  assert.ok(control >= 10 && experiment >= 10, `control ${control}, experiment ${experiment}`);

  const page = await browser.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.goto(`${BASE}/experiments`);
  const card = page.locator(`[data-testid=run][data-run="${run}"]`);
  await card.waitFor({ timeout: 10_000 });
  assert.match(await card.locator('[data-testid=time-left]').innerText(), /4[45] min \d\d s left/);
  const table = card.locator('table[data-testid=device-table][data-device=browser]');
  await table.waitFor();
  const rows = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => ({
    kpi: tr.dataset.kpi, cells: Array.from(tr.cells, (td) => td.innerText),
  })));
  assert.deepEqual(rows.map((r) => r.kpi),
    ['start_failure_rate', 'playback_error_rate', 'stall_rate', 'critical_failure_rate', 'time_to_first_frame']);
  const ttff = rows.find((r) => r.kpi === 'time_to_first_frame');
  assert.match(ttff.cells[1], new RegExp(`n=${control}\\b`), JSON.stringify(ttff));
  assert.match(ttff.cells[2], new RegExp(`n=${experiment}\\b`), JSON.stringify(ttff));
  assert.match(ttff.cells[5], /deviation|not enough data/, JSON.stringify(ttff));

  // "Start now" on the second definition starts its run.
  await page.locator('button[data-action=start][data-id=e2e-later]').click();
  await page.locator('[data-testid=run][data-run^="e2e-later@"]').waitFor({ timeout: 10_000 });
  const running = (await api('GET', '/api/experiments')).json.running.map((r) => r.experiment).sort();
  assert.deepEqual(running, ['e2e-degraded', 'e2e-later']);
  assert.deepEqual(pageErrors, []);
  await page.close();
});

test('a guardrail breach ends the run and the page shows the alert', { timeout: 120_000 }, async () => {
  const tv = { ...definition('e2e-tv'), priorities: { min: 0, max: 99 }, devices: ['smart_tv'] };
  assert.equal((await api('POST', '/api/experiments', tv)).status, 201);
  const started = await api('POST', '/api/experiments/e2e-tv/start');
  assert.equal(started.status, 200, JSON.stringify(started.json));
  const run = started.json.run;
  // Smart TVs that report their start and ask for the master playlist: the
  // experiment group's playlist requests are shed (failed CRITICAL requests).
  let shed = 0;
  for (let i = 0; i < 600; i += 1) {
    const who = { session: `tv-${i}`, member: `tv-member-${i}` };
    // KPI beacons are never shed for an experiment, even one over every priority.
    const beacon = await fetch(`${BASE}/telemetry/kpi`, {
      method: 'POST', headers: { 'X-Brdyun-Device': 'smart_tv', 'X-Brdyun-Member': who.member },
      body: JSON.stringify({ ...who, event: 'start', ttff_ms: 900 }),
    });
    assert.equal(beacon.status, 204);
    const res = await fetch(`${BASE}/meeting/index.m3u8`, {
      headers: { 'X-Brdyun-Device': 'smart_tv', 'X-Brdyun-Member': who.member, 'X-Brdyun-Session': who.session },
    });
    if (res.status === 503) shed += 1;
  }
  assert.ok(shed >= 30, `only ${shed} requests shed`);
  // The node's 1 s tick sees the breach.
  const deadline = Date.now() + 10_000;
  let record;
  while (!record && Date.now() < deadline) {
    record = (await api('GET', '/api/experiments')).json.history.find((h) => h.id === run);
    if (!record) await new Promise((r) => setTimeout(r, 250));
  }
  assert.ok(record, 'the run did not end');
  assert.equal(record.outcome.reason, 'guardrail');
  assert.deepEqual(record.verdict.hurt.map((h) => h.device), ['smart_tv']);

  const page = await browser.newPage();
  await page.goto(`${BASE}/experiments`);
  const alert = page.locator('[data-testid=alert]', { hasText: 'e2e-tv' });
  await alert.waitFor({ timeout: 10_000 });
  assert.match(await alert.innerText(), /smart_tv turned to deviation .*failed critical requests/);
  const entry = page.locator('[data-testid=history-run]', { hasText: run });
  assert.match(await entry.locator('summary').innerText(), /aborted: guardrail critical_failure_share on smart_tv.*hurt: smart_tv/);
  await entry.locator('summary').click();
  const row = entry.locator('table[data-device=smart_tv] tr[data-kpi=critical_failure_rate]');
  const cells = await row.locator('td').allInnerTexts();
  // Control: no failed request. Experiment: every session whose request was answered
  // before the verdict failed; the tick may end the run between a session's start
  // beacon and its playlist request, so at most one attempted session has no failure.
  assert.match(cells[1], /^0\.00 %/, JSON.stringify(cells));
  const [, percent, n] = cells[2].match(/^([\d.]+) %.*n=(\d+)/s) ?? [];
  const failed = Math.round((Number(percent) * Number(n)) / 100);
  assert.ok(Number(n) > 0 && failed >= Number(n) - 1, JSON.stringify(cells));
  assert.match(cells.at(-1), /deviation/, JSON.stringify(cells));
  await page.close();
});
