// The player matrix: each player (default settings, unless a cell names what a site
// should set) plays node a of a three-node OTT group, each node on a host name of its
// own (`node-a.localhost`, ...: Chromium resolves *.localhost to loopback, and the nodes
// announce those names in their backup and steering URLs), while node a is killed
// (kill -9), hung (SIGSTOP), loses its input (POST /api/streams/{name}/pause) or is
// drained (POST /api/drain). A cell records the viewer's stall and its recovery.
import { startCluster, waitProtected, masterOf, pollUntil } from '../processes.mjs';
import { openPlayer, viewerState, resetStalls } from './site.mjs';

/** The players of the matrix: the page each uses and the playlist it opens. */
export const PLAYERS = {
  'hls.js': { page: 'hlsjs', file: 'index.m3u8' },
  'video.js': { page: 'videojs', file: 'index.m3u8' },
  'Shaka HLS': { page: 'shaka', file: 'index.m3u8' },
  'Shaka DASH': { page: 'shaka', file: 'index.mpd' },
  'dash.js': { page: 'dashjs', file: 'index.mpd' },
};

/** What befalls the serving node, and how it is undone after the cell. */
export const FAILURES = {
  'kill -9': {
    fail: (a) => a.kill9(),
    undo: async (a) => { if (!a.pid) await a.start(); },
  },
  SIGSTOP: {
    fail: (a) => a.hang(),
    undo: async (a) => a.resume(),
  },
  'input pause': {
    fail: (a) => fetch(`${a.base}/api/streams/meeting/pause`, { method: 'POST' }).then((r) => r.arrayBuffer()),
    undo: (a) => fetch(`${a.base}/api/streams/meeting/resume`, { method: 'POST' }).then((r) => r.arrayBuffer()),
  },
  drain: {
    fail: (a) => fetch(`${a.base}/api/drain`, { method: 'POST' }).then((r) => r.arrayBuffer()),
    undo: (a) => fetch(`${a.base}/api/drain`, { method: 'DELETE' }).then((r) => r.arrayBuffer()),
  },
};

/** The host name node `name` announces and a viewer's player uses. */
export const hostOf = (name) => `node-${name}.localhost`;

/** Starts the group: an MC with the built-in meeting, nodes a, b, c on host names of their own. */
export async function startMatrixCluster() {
  const cluster = await startCluster({ announce: (name, port) => [`http://${hostOf(name)}:${port}`] });
  const { a, b, c } = cluster.nodes;
  await waitProtected([a, b, c]);
  return cluster;
}

/** Waits until node a offers both backups by their host names and steering, with 4 segments in its window. */
export async function settle(cluster) {
  const { a, b, c } = cluster.nodes;
  await waitProtected([a, b, c]);
  const ok = await pollUntil('a offers b and c by name, with steering', async () => {
    const m = await masterOf(a, 'meeting', 2_000);
    return m && m.variants.length === 3 && m.text.includes('#EXT-X-CONTENT-STEERING')
      && [b, c].every((n) => m.variants.some((u) => new URL(u).host === `${hostOf(n.name.slice(5))}:${n.http}`)) && m;
  }, { limitMs: 30_000 });
  await pollUntil('a\'s window holds four segments', async () => {
    const text = await fetch(`${a.base}/meeting/mono.m3u8`).then((r) => r.text()).catch(() => '');
    return (text.match(/#EXTINF/g) || []).length >= 4;
  }, { limitMs: 30_000 });
  return ok.value;
}

/**
 * Runs one cell: `player` (a key of PLAYERS) plays node a by its host name, `failure`
 * (a key of FAILURES) befalls a, playback is watched `watchMs` (longer, up to
 * `recoverWithinMs` from the failure, while the player is not yet on a backup). Returns
 * the cell's figures; undoes the failure and waits for the group to be whole again.
 */
export async function runCell(browser, cluster, player, failure, { config = null, watchMs = 20_000, recoverWithinMs = 75_000 } = {}) {
  const { a } = cluster.nodes;
  const { page: pageName, file } = PLAYERS[player];
  await settle(cluster);
  const page = await browser.newPage();
  const aHost = `${hostOf('a')}:${a.http}`;
  let failedAt = 0;
  try {
    // E2E_MATRIX_TRACE=1: every request of the page, times from the failure, on the console.
    if (process.env.E2E_MATRIX_TRACE === '1') {
      const t = () => (failedAt ? `${((Date.now() - failedAt) / 1000).toFixed(2)}` : 'before');
      page.on('request', (r) => console.log(`trace ${t()} sent ${r.url()}`));
      page.on('requestfinished', async (r) => console.log(`trace ${t()} done ${(await r.response().catch(() => null))?.status()} ${r.url()}`));
      page.on('requestfailed', (r) => console.log(`trace ${t()} failed ${r.failure()?.errorText} ${r.url()}`));
      page.on('console', (m) => console.log(`trace ${t()} console ${m.text().slice(0, 300)}`));
    }
    const { media, pageErrors } = await openPlayer(page, pageName, `http://${aHost}/meeting/${file}`, { config });
    const before = await viewerState(page);
    const fromA = media.at(-1)?.host === aHost;
    await resetStalls(page);
    failedAt = Date.now();
    await FAILURES[failure].fail(a);
    await page.waitForTimeout(watchMs);
    const lastHost = () => media.at(-1)?.host;
    const onBackup = () => lastHost() !== aHost && media.at(-1)?.at > failedAt;
    let end = await viewerState(page);
    while (!(onBackup() && end.frozenMs < 1_000) && Date.now() - failedAt < recoverWithinMs) {
      await page.waitForTimeout(1_000);
      end = await viewerState(page);
    }
    if (onBackup() && Date.now() - failedAt > watchMs + 1_000) {
      await page.waitForTimeout(5_000);
      end = await viewerState(page);
    }
    const watchedMs = Date.now() - failedAt;
    const moved = media.find((m) => m.at > failedAt && m.host !== aHost && m.status === 200);
    const errorsAfter = end.errors.filter((e) => e.at > failedAt);
    return {
      player,
      failure,
      config,
      playingFromA: fromA,
      bufferAtFailureS: Number(before.bufferAhead.toFixed(1)),
      longestStallMs: Math.round(end.longestStallMs),
      maxFrozenMs: Math.round(end.maxFrozenMs),
      stalls: end.stalls,
      firstBackupSegmentMs: moved ? moved.at - failedAt : null,
      onBackupAtEnd: onBackup(),
      playingAtEnd: end.frozenMs < 1_000,
      playedS: Number((end.played - before.played).toFixed(1)),
      watchedMs,
      fatalErrors: end.fatalErrors.map((e) => e.details),
      errorsAfter: summarise(errorsAfter),
      pageErrors,
    };
  } finally {
    await page.close();
    await FAILURES[failure].undo(a);
    await settle(cluster);
  }
}

/** Errors as `details×count`. */
function summarise(errors) {
  const counts = new Map();
  for (const e of errors) {
    const key = e.details.replace(/\s.*$/s, (m) => (m.length > 60 ? m.slice(0, 60) : m));
    counts.set(key, (counts.get(key) || 0) + 1);
  }
  return [...counts].map(([k, n]) => `${k}×${n}`).join(', ') || 'none';
}

/** One line of a cell's figures, for the test's output and the docs. */
export function describe(cell) {
  return `${cell.player}${cell.config ? ' (set)' : ''} × ${cell.failure}: longest stall ${cell.longestStallMs} ms, `
    + `clock frozen at most ${cell.maxFrozenMs} ms, ${cell.stalls} stall(s), first segment from a backup `
    + `${cell.firstBackupSegmentMs ?? '-'} ms after the failure, buffer ${cell.bufferAtFailureS} s, `
    + `${cell.onBackupAtEnd && cell.playingAtEnd ? 'playing from a backup' : 'NOT recovered'} after ${cell.watchedMs} ms, `
    + `fatal ${cell.fatalErrors.length}, errors ${cell.errorsAfter}`;
}
