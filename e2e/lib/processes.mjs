// Real brdyun processes for the OTT end-to-end tests: one MC fed by the built-in meeting
// and nodes that pull the meeting from it, each in its own process, all in one OTT
// domain, so a test can kill -9, hang (SIGSTOP) and restart a node the way production
// loses one. Configs are ordinary TOML files in a temporary directory; every child is
// killed by `stopAll()` (call it from `after()`) and, as a last resort, when the test
// process exits.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { mkdtempSync, openSync, closeSync, writeFileSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import dgram from 'node:dgram';
import { BIN } from './cluster.mjs';

/** How long a process may take to print its `listening` line. */
const START_LIMIT_MS = 20_000;

/**
 * The tests' service manager as a program (`examples/notify_supervisor.rs`, built by
 * `cargo build --release --example notify_supervisor`): it runs a node as systemd runs a
 * `Type=notify` unit with `WatchdogSec=`, `Restart=always`, `RestartSec=0`, and prints
 * each event (started, ready, watchdog, killed_by_watchdog, exited) as a JSON line.
 */
export const SUPERVISOR_BIN = process.env.BRDYUN_SUPERVISOR_BIN
  || new URL('../../target/release/examples/notify_supervisor', import.meta.url).pathname;

/** Every child started here and not yet reaped, so nothing outlives the tests. */
const live = new Set();
/** The pids of supervised processes, which a supervisor killed with SIGKILL leaves behind. */
const livePids = new Set();
function killLive() {
  for (const child of live) {
    try { child.kill('SIGKILL'); } catch { /* already gone */ }
  }
  for (const pid of livePids) signalPid(pid, 'SIGKILL');
}

/**
 * Starts a child that is not brdyun (etcd, ffmpeg) with its output appended to
 * `logPath`; it is killed with the others at exit, like every child started here.
 */
export function startChild(command, args, logPath) {
  const log = openSync(logPath, 'a');
  const child = spawn(command, args, { stdio: ['ignore', log, log] });
  closeSync(log);
  live.add(child);
  child.on('exit', () => live.delete(child));
  return child;
}

/** Sends `signal` to `pid`; false when there is no such process any more. */
function signalPid(pid, signal) {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}
process.on('exit', killLive);
// The test runner ends a file that overruns with a signal: take the children along.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    killLive();
    process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
  });
}

/** Ports are picked below Linux's default ephemeral range (32768-60999), so a port
 * freed for a node to restart on is not handed to some outgoing connection meanwhile. */
const PORT_LOW = 20_000;
const PORT_HIGH = 32_000;

/** Whether `port` can be bound on 127.0.0.1 for TCP and UDP now; the sockets stay held in `held`. */
async function bindBoth(port, held) {
  const server = net.createServer();
  const tcp = await new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (!tcp) return false;
  held.push(server);
  const socket = dgram.createSocket('udp4');
  const udp = await new Promise((resolve) => {
    socket.once('error', () => resolve(false));
    socket.bind(port, '127.0.0.1', () => resolve(true));
  });
  if (udp) held.push(socket);
  return udp;
}

/**
 * `count` distinct free loopback ports, each free for TCP and for UDP at the time of
 * the call (the node's HTTP listener is TCP, its gossip UDP), picked at random between
 * PORT_LOW and PORT_HIGH. All are held until every one is found, so the list has no
 * duplicates.
 */
export async function freePorts(count) {
  const held = [];
  const ports = [];
  try {
    for (let tries = 0; ports.length < count; tries += 1) {
      if (tries > 1_000) throw new Error(`no ${count} free loopback ports between ${PORT_LOW} and ${PORT_HIGH}`);
      const port = PORT_LOW + Math.floor(Math.random() * (PORT_HIGH - PORT_LOW));
      if (!ports.includes(port) && await bindBoth(port, held)) ports.push(port);
    }
  } finally {
    for (const h of held) {
      try { h.close(); } catch { /* already closed */ }
    }
  }
  return ports;
}

const tomlString = (s) => JSON.stringify(String(s));
const tomlList = (list) => `[${list.map(tomlString).join(', ')}]`;

/** The ABR ladder of the demo (docs/ladder.md): the source and two transcoded rungs. */
export const DEMO_LADDER = `[mc.ladder]
threads = 1
rungs = [
  { name = "source" },
  { name = "240p", height = 240, video_kbps = 250 },
  { name = "144p", height = 144, video_kbps = 100, profile = "baseline" },
]
`;

/** The built-in source's two languages (docs/languages.md): the floor and Spanish. */
const MEETING_LANGUAGES = `
[[meeting.language]]
code = "eng"

[[meeting.language]]
code = "spa"
name = "Español"
`;

/**
 * The MC's config: the preset meeting `meeting` fed by the built-in source; with
 * `ladder`, encoded into the demo's ABR ladder; with `languages`, offering the built-in
 * source's two audio languages; with `privateMeeting`, the private meeting `board` too.
 */
export function mcToml({ http, dataDir, ladder = false, privateMeeting = false, languages = false }) {
  return `[mc]
name = "mc"
trust_loopback = true
http = ${tomlString(`127.0.0.1:${http}`)}
data_dir = ${tomlString(dataDir)}
${ladder ? DEMO_LADDER : ''}
[[meeting]]
id = "meeting"
title = "e2e meeting"
start = true
inputs = ["builtin://meeting"]
${languages ? MEETING_LANGUAGES : ''}
${privateMeeting ? PRIVATE_MEETING : ''}`;
}

/** A second preset: the private meeting `board`, fed by the built-in source. */
const PRIVATE_MEETING = `
[[meeting]]
id = "board"
title = "e2e private meeting"
start = true
private = true
inputs = ["builtin://meeting"]
`;

/**
 * A node's config: it learns the meetings from the MC, delivers each with
 * `ott_backup = true` (one OTT group per meeting) and joins the domain `secret` with
 * the other nodes' gossip addresses as seeds. `announce` (optional) replaces the
 * derived address (`http://127.0.0.1:PORT`, a private one); `dvr` has it record the
 * meetings. Nodes pull the MC's
 * whole-segment relay; `E2E_LIVE_RELAY=1` in the environment has them pull its live relay.
 */
export function nodeToml({ name, http, gossip, seeds, secret, mcPort, dataDir, announce, host = '127.0.0.1', dvr = false }) {
  return `[node]
name = ${tomlString(name)}
trust_loopback = true
http = ${tomlString(`${host}:${http}`)}
data_dir = ${tomlString(dataDir)}

[mc]
url = ${tomlString(`http://127.0.0.1:${mcPort}`)}
poll_interval = 0.5
timeout = 2
${process.env.E2E_LIVE_RELAY === '1' ? 'live_relay = true\n' : ''}
[mc.stream]
ott_backup = true
${dvr ? 'dvr = { enabled = true, depth = "1h" }\n' : ''}
[ott]
domain_secret = ${tomlString(secret)}
gossip = ${tomlString(`127.0.0.1:${gossip}`)}
seeds = ${tomlList(seeds.map((p) => `127.0.0.1:${p}`))}
${announce ? `announce = ${tomlList(announce)}\n` : ''}`;
}

/**
 * One brdyun process (`brdyun ROLE --config FILE`): started, killed, hung, resumed and
 * restarted with the same config. Its stderr (the logs) goes to `LOG` next to the
 * config, for a failing test to point at.
 */
export class Proc {
  /**
   * `watchdogMs` (optional): run the process under the notify supervisor
   * (SUPERVISOR_BIN) with that watchdog period; else it is a plain child. A supervised
   * process's own log stays in the supervisor's temporary directory; `logPath` gets the
   * supervisor's.
   */
  constructor({ role, name, configPath, logPath, watchdogMs = null }) {
    this.role = role;
    this.name = name;
    this.configPath = configPath;
    this.logPath = logPath;
    this.watchdogMs = watchdogMs;
    this.child = null;
    this.listening = null;
    this.stopped = false;
    // Supervised: the supervisor's events, the running process's pid, the hung one's.
    this.events = [];
    this.childPid = null;
    this.hungPid = null;
    this.clockOffset = Infinity;
  }

  /** Starts the process; resolves with the fields of its `listening` line. */
  async start() {
    if (this.child) throw new Error(`${this.name} is already running`);
    if (this.watchdogMs) return this.startSupervised();
    const log = openSync(this.logPath, 'a');
    const child = spawn(BIN, [this.role, '--config', this.configPath], {
      env: { ...process.env, RUST_LOG: process.env.RUST_LOG || 'info' },
      stdio: ['ignore', 'pipe', log],
    });
    closeSync(log);
    this.child = child;
    this.stopped = false;
    live.add(child);
    child.on('exit', () => {
      live.delete(child);
      if (this.child === child) this.child = null;
    });
    const lines = createInterface({ input: child.stdout });
    this.listening = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.name} did not start in ${START_LIMIT_MS} ms (log ${this.logPath})`)), START_LIMIT_MS);
      lines.on('line', (line) => {
        if (!line.startsWith('listening ')) return;
        clearTimeout(timer);
        resolve(Object.fromEntries(line.slice('listening '.length).split(' ').map((kv) => kv.split('='))));
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`${this.name} exited (${code ?? signal}) before listening; log ${this.logPath}:\n${tail(this.logPath)}`));
      });
    });
    return this.listening;
  }

  /**
   * Starts the supervisor, which starts the process; resolves (with `{ http }`) once
   * the process has said READY=1. Every event the supervisor prints is kept in
   * `events` as `{ event, pid, http, at }`, `at` on this process's clock (`Date.now()`).
   */
  async startSupervised() {
    const log = openSync(this.logPath, 'a');
    const child = spawn(SUPERVISOR_BIN, [BIN, this.role, this.configPath, String(this.watchdogMs)], {
      env: { ...process.env, RUST_LOG: process.env.RUST_LOG || 'info' },
      stdio: ['pipe', 'pipe', log],
    });
    closeSync(log);
    this.child = child;
    this.stopped = false;
    this.events = [];
    live.add(child);
    child.on('exit', () => {
      live.delete(child);
      if (this.child === child) this.child = null;
    });
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      let e;
      try { e = JSON.parse(line); } catch { return; }
      // The supervisor's clock (ms since it started) mapped onto ours: the smallest
      // seen difference between when a line arrived and when it says it happened.
      const seen = Date.now();
      this.clockOffset = Math.min(this.clockOffset, seen - e.at_ms);
      this.events.push({ event: e.event, pid: e.pid, http: e.http, atMs: e.at_ms, seen });
      if (e.event === 'started') {
        this.childPid = e.pid;
        livePids.add(e.pid);
      }
      if (e.event === 'killed_by_watchdog' || e.event === 'exited') livePids.delete(e.pid);
    });
    this.listening = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.name} was not ready in ${START_LIMIT_MS} ms (log ${this.logPath})`)), START_LIMIT_MS);
      const onLine = (line) => {
        if (!line.includes('"ready"')) return;
        clearTimeout(timer);
        lines.off('line', onLine);
        resolve({ http: JSON.parse(line).http });
      };
      lines.on('line', onLine);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`${this.name}'s supervisor exited (${code ?? signal}) before it was ready; log ${this.logPath}:\n${tail(this.logPath)}`));
      });
    });
    return this.listening;
  }

  /** When (`Date.now()` clock) event `kind` happened, for events seen so far. */
  eventTimes(kind) {
    return this.events.filter((e) => e.event === kind).map((e) => e.atMs + this.clockOffset);
  }

  /**
   * Supervised: resolves with the first event `kind` (as kept in `events`, plus `at`)
   * that happened at or after `since` (`Date.now()` clock), waiting at most `limitMs`.
   */
  async supervisorEvent(kind, since, limitMs = 10_000) {
    const deadline = Date.now() + limitMs;
    for (;;) {
      // 30 ms of grace: the clocks are mapped to within the supervisor's 20-ms polling.
      const e = this.events.find((x) => x.event === kind && x.atMs + this.clockOffset >= since - 30);
      if (e) return { ...e, at: e.atMs + this.clockOffset };
      if (Date.now() > deadline) {
        throw new Error(`${this.name}: no ${kind} within ${limitMs} ms; events: ${JSON.stringify(this.events.slice(-10))}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** The process id (supervised: the process the supervisor runs now), or null when not running. */
  get pid() {
    if (!this.child) return null;
    return this.watchdogMs ? this.childPid : this.child.pid;
  }

  /**
   * `kill -9`: the node dies without a word to anyone. Supervised, the service goes:
   * the supervisor is told to stop (its stdin closed) and killed with its process.
   */
  async kill9() {
    const child = this.child;
    if (!child) return;
    if (this.watchdogMs) {
      await this.stopSupervised(child);
      return;
    }
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    }
    this.child = null;
  }

  /** Ends a supervisor and the process it runs, waiting at most 5 s for it to stop by itself. */
  async stopSupervised(child) {
    const pid = this.childPid;
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    if (pid) {
      signalPid(pid, 'SIGKILL');
      livePids.delete(pid);
    }
    this.child = null;
    this.childPid = null;
  }

  /**
   * `SIGSTOP`: the node hangs; its sockets stay open and nothing answers. Supervised,
   * the process the supervisor runs hangs (the supervisor does not).
   */
  hang() {
    if (!this.child) throw new Error(`${this.name} is not running`);
    if (this.watchdogMs) {
      this.hungPid = this.childPid;
      signalPid(this.hungPid, 'SIGSTOP');
    } else {
      this.child.kill('SIGSTOP');
    }
    this.stopped = true;
  }

  /** `SIGCONT` after [`hang`] (supervised: to the hung process, if the watchdog has not killed it). */
  resume() {
    if (this.child && this.stopped) {
      if (this.watchdogMs) signalPid(this.hungPid, 'SIGCONT');
      else this.child.kill('SIGCONT');
    }
    this.stopped = false;
  }

  /** Kills the process (if running) and starts it again with the same config. */
  async restart() {
    await this.kill9();
    return this.start();
  }

  /** Replaces the config file (takes effect at the next start). */
  rewriteConfig(text) {
    writeFileSync(this.configPath, text);
  }
}

function tail(path, lines = 20) {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** A node process with its ports and URLs. */
export class NodeProc extends Proc {
  constructor(fields) {
    super({ role: 'node', ...fields });
    this.http = fields.http;
    this.gossip = fields.gossip;
    this.host = fields.host ?? '127.0.0.1';
    this.base = `http://${this.host}:${fields.http}`;
  }
}

const DEFAULT_SECRET = 'brdyun e2e domain secret, loopback only';

/**
 * Starts an MC (unless `mcPort` names a running one) and one node per name in `names`,
 * all nodes in one OTT domain. `announce(name, httpPort)` may return the addresses a
 * node announces (default: derived, `http://127.0.0.1:PORT`). Resolves once every
 * process listens; the meeting still needs a few seconds to reach the nodes (see
 * [`waitProtected`]). With `watchdogMs`, each node runs under the notify supervisor with
 * that watchdog period (a hung node is killed and restarted, as under systemd). With
 * `dvr`, each node records the meetings (an hour deep) for catch-up.
 */
export async function startCluster({
  names = ['a', 'b', 'c'], secret = DEFAULT_SECRET, announce, mcPort, ladder = false, privateMeeting = false, distinctHosts = false, watchdogMs = null,
  languages = false, dvr = false,
} = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'brdyun-e2e-'));
  const ports = await freePorts(1 + 2 * names.length);
  const cluster = { dir, mc: null, nodes: {}, extra: [], mcPort: mcPort ?? ports[0] };
  cluster.stopAll = async () => {
    const all = [...Object.values(cluster.nodes), ...cluster.extra, cluster.mc].filter(Boolean);
    for (const p of all) p.resume();
    await Promise.all(all.map((p) => p.kill9()));
    if (!process.env.E2E_KEEP) rmSync(dir, { recursive: true, force: true });
  };
  try {
    if (mcPort === undefined) {
      const configPath = join(dir, 'mc.toml');
      writeFileSync(configPath, mcToml({ http: cluster.mcPort, dataDir: join(dir, 'mc'), ladder, privateMeeting, languages }));
      cluster.mc = new Proc({ role: 'mc', name: 'mc', configPath, logPath: join(dir, 'mc.log') });
      await cluster.mc.start();
    }
    const http = names.map((_, i) => ports[1 + i]);
    const gossip = names.map((_, i) => ports[1 + names.length + i]);
    names.forEach((name, i) => {
      cluster.nodes[name] = nodeProc(cluster, {
        name,
        http: http[i],
        gossip: gossip[i],
        seeds: gossip.filter((_, j) => j !== i),
        secret,
        announce: announce ? announce(name, http[i]) : undefined,
        // Each node on a loopback address of its own (127.0.0.2, .3, …), as nodes of a
        // real domain have host names of their own: players that ban a failing host
        // (Shaka) then ban that node only.
        host: distinctHosts ? `127.0.0.${2 + i}` : undefined,
        watchdogMs,
        dvr,
      });
    });
    await Promise.all(Object.values(cluster.nodes).map((n) => n.start()));
  } catch (e) {
    await cluster.stopAll();
    throw e;
  }
  return cluster;
}

/** Writes a node's config into the cluster's directory and returns its (not started) process. */
function nodeProc(cluster, { name, http, gossip, seeds, secret, announce, host, watchdogMs, dvr }) {
  const configPath = join(cluster.dir, `node-${name}.toml`);
  writeFileSync(configPath, nodeToml({
    name: `node-${name}`, http, gossip, seeds, secret, mcPort: cluster.mcPort, dataDir: join(cluster.dir, `node-${name}`), announce, host, dvr,
  }));
  return new NodeProc({ name: `node-${name}`, configPath, logPath: join(cluster.dir, `node-${name}.log`), http, gossip, host, watchdogMs });
}

/**
 * Starts one more node `name` that pulls the cluster's MC and seeds gossip with the
 * cluster's nodes, in the domain of `secret` (default: the cluster's usual one; another
 * secret makes an intruder). It is stopped with the cluster.
 */
export async function startExtraNode(cluster, name, { secret = DEFAULT_SECRET } = {}) {
  const [http, gossip] = await freePorts(2);
  const node = nodeProc(cluster, { name, http, gossip, seeds: Object.values(cluster.nodes).map((n) => n.gossip), secret });
  cluster.extra.push(node);
  await node.start();
  return node;
}

/** A browser-like User-Agent: the node offers backups to it (OTT-PLAY-1). */
export const BROWSER_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36';

/** The variant URLs of a master playlist, resolved against `base`. */
export function variantUrls(master, base) {
  const lines = master.split('\n').map((l) => l.trim());
  const out = [];
  lines.forEach((line, i) => {
    if (line.startsWith('#EXT-X-STREAM-INF')) {
      const uri = lines.slice(i + 1).find((l) => l && !l.startsWith('#'));
      if (uri) out.push(new URL(uri, base).href);
    }
  });
  return out;
}

/**
 * `node`'s master playlist of `stream` as a switching player gets it, and its variant
 * URLs; `null` when the node does not answer 200 within `timeoutMs`.
 */
export async function masterOf(node, stream = 'meeting', timeoutMs = 2_000, file = 'index.m3u8') {
  const url = `${node.base}/${stream}/${file}`;
  try {
    const res = await fetch(url, { headers: { 'User-Agent': BROWSER_UA }, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
    if (res.status !== 200) return null;
    const text = await res.text();
    return { text, variants: variantUrls(text, url) };
  } catch {
    return null;
  }
}

/** Polls `check` (async, truthy ends the wait) every `everyMs` until `limitMs`; resolves with the truthy value and the time it took. */
export async function pollUntil(what, check, { limitMs = 30_000, everyMs = 250 } = {}) {
  const start = Date.now();
  for (;;) {
    const value = await check();
    if (value) return { value, ms: Date.now() - start };
    if (Date.now() - start > limitMs) throw new Error(`${what}: not within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * Whether `node` serves its player script (200): a node that has just come back from a
 * hang sheds its lower-priority requests for a few seconds, the page's script among them.
 */
export async function servesPlayer(node, timeoutMs = 2_000) {
  try {
    const res = await fetch(`${node.base}/player/hls.min.js`, { signal: AbortSignal.timeout(timeoutMs) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

/**
 * Resolves once every node in `nodes` offers itself and every other one in its master
 * playlist (each with all `rungs` of the meeting's ladder), and serves the player
 * page's script.
 */
export async function waitProtected(nodes, limitMs = 45_000, rungs = 1) {
  const ports = nodes.map((n) => String(n.http));
  return pollUntil(`backups offered by ${nodes.map((n) => n.name).join(', ')}`, async () => {
    const masters = await Promise.all(nodes.map((n) => masterOf(n)));
    const offered = masters.every((m) => m && m.variants.length === nodes.length * rungs
      && ports.every((p) => m.variants.some((u) => new URL(u).port === p)));
    return offered && (await Promise.all(nodes.map((n) => servesPlayer(n)))).every(Boolean);
  }, { limitMs });
}

/**
 * Opens `url` in `page` until `ready` (a function run in the page) holds. Pages and
 * their scripts are NON_CRITICAL to the node's shedder, so on a loaded machine a node may
 * answer them with a back-pressure 503 (or shed the page's script); like a person, the
 * test reloads, at most until `limitMs`, and says so on the console.
 */
export async function openPage(page, url, ready, limitMs = 30_000) {
  const deadline = Date.now() + limitMs;
  const shed = [];
  const onResponse = (res) => {
    if (res.status() === 503) shed.push(`${res.url()} Retry-After ${res.headers()['retry-after'] ?? '-'}`);
  };
  page.on('response', onResponse);
  try {
    for (let attempt = 1; ; attempt += 1) {
      const before = shed.length;
      const response = await page.goto(url);
      const ok = response?.status() === 200
        && await page.waitForFunction(ready, null, { timeout: 3_000 }).then(() => true, () => false);
      if (ok) {
        if (attempt > 1) console.log(`${url}: opened at attempt ${attempt}; shed before: ${JSON.stringify(shed)}`);
        return response;
      }
      if (Date.now() > deadline) {
        throw new Error(`${url} not ready within ${limitMs} ms (${attempt} attempts; status ${response?.status()}; shed: ${JSON.stringify(shed)})`);
      }
      if (shed.length === before) await new Promise((r) => setTimeout(r, 250));
      else await new Promise((r) => setTimeout(r, 1_000));
    }
  } finally {
    page.off('response', onResponse);
  }
}
