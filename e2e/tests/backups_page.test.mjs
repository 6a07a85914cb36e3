// The Backups screen (OTT-OPS-1) in headless Chromium, on real node processes: with
// three healthy nodes the group reads "protected", every member has its row and the
// OTT view key is "in use"; in a domain where two nodes announce a host name (public,
// OTT-ADDR-2) and the third only a private IP, the group is not protected and the
// page names the third node's private-address problem in plain words. Screenshots go
// to e2e/artifacts/ for a human to look at.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { launchBrowser } from '../lib/cluster.mjs';
import { startCluster, waitProtected, pollUntil, openPage } from '../lib/processes.mjs';

const ARTIFACTS = new URL('../artifacts/', import.meta.url).pathname;

let healthy;
let mixed;
let browser;

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  healthy = await startCluster();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await mixed?.stopAll();
  await healthy?.stopAll();
});

/** The group card of `meeting` on a Backups page, once it reads `state`. */
async function groupCard(page, state) {
  const card = page.locator('[data-group="meeting"]');
  await pollUntil(`the group reads "${state}"`, async () => {
    const text = await card.locator('[data-testid="group-state"]').textContent({ timeout: 1_000 }).catch(() => null);
    return text?.trim() === state;
  }, { limitMs: 30_000, everyMs: 500 });
  return card;
}

test('three healthy nodes: the group is protected, every member has a row, the view key is in use (OTT-OPS-1)', { timeout: 90_000 }, async () => {
  const { a, b, c } = healthy.nodes;
  await waitProtected([a, b, c]);
  const page = await browser.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  try {
    await openPage(page, `${a.base}/backups`, () => document.getElementById('at').textContent !== 'never');
    const card = await groupCard(page, 'protected');
    const rows = await card.locator('tr[data-node]').evaluateAll((trs) => trs.map((tr) => tr.dataset.node));
    assert.equal(rows.length, 3, `one row per member: ${rows}`);
    for (const name of ['node-a', 'node-b', 'node-c']) {
      assert.ok(rows.some((r) => r.startsWith(name)), `${name} has a row: ${rows}`);
    }
    // a's own row carries the test-failure control, the others do not.
    assert.equal(await card.locator('tr[data-node^="node-a"] button[data-action="pause"]').count(), 1);
    assert.equal(await card.locator('tr[data-node^="node-b"] button').count(), 0);
    assert.equal(await card.locator('.problems-list li').count(), 0, 'no problem listed');
    const key = await page.getByTestId('view-key').textContent();
    assert.equal(key.trim(), 'in use');
    assert.match(await page.locator('#view-key-detail').textContent(), /held by 3 of 3 live node/);
    // These nodes have no recordings store: the page says where the archive stays.
    assert.match(await page.getByTestId('recordings-state').textContent(), /^off: the archive stays on this node's disk/);
    await page.screenshot({ path: `${ARTIFACTS}backups-protected.png`, fullPage: true });
    assert.deepEqual(pageErrors, []);
  } finally {
    await page.close();
  }
});

test('a node with only a private address: the group is not protected and the page says why (OTT-ADDR-2, OTT-OPS-1)', { timeout: 90_000 }, async () => {
  // A second domain on the same MC: a and b announce a host name (public), c only its
  // loopback IP (private), so c cannot be a backup for a's public viewers.
  mixed = await startCluster({
    mcPort: healthy.mcPort,
    secret: 'brdyun e2e second domain, loopback only',
    announce: (name, port) => [name === 'c' ? `http://127.0.0.1:${port}` : `http://localhost:${port}`],
  });
  const { a } = mixed.nodes;
  const page = await browser.newPage();
  try {
    await openPage(page, `${a.base}/backups`, () => document.getElementById('at').textContent !== 'never');
    const card = await groupCard(page, 'not protected');
    // Wait for c's row and its address problem (the mesh needs a moment to converge).
    const cRow = card.locator('tr[data-node^="node-c"]');
    const text = await pollUntil('c\'s private-address problem is shown', async () => {
      const t = await cRow.textContent({ timeout: 1_000 }).catch(() => '');
      return /private/.test(t) && t;
    }, { limitMs: 30_000, everyMs: 500 });
    assert.match(text.value, /only private addresses for backup/);
    const groupProblems = await card.locator(':scope > ul.problems-list').textContent();
    assert.match(groupProblems, /a node has only private addresses for backup \(node-c/);
    // b announces a host name: no address problem on its row.
    const bRow = await card.locator('tr[data-node^="node-b"]').textContent();
    assert.doesNotMatch(bRow, /private/);
    // The nodes table marks the addresses.
    const nodes = await page.locator('#nodes').textContent();
    assert.match(nodes, /localhost:\d+ \(public\)/);
    assert.match(nodes, /127\.0\.0\.1:\d+ \(private\)/);
    await page.screenshot({ path: `${ARTIFACTS}backups-private-address.png`, fullPage: true });
  } finally {
    await page.close();
  }
});
