// A meeting published twice to one MC (docs/ingest.md, primary and backup publish), for
// the end-to-end tests: the MC with its RTMP and SRT listeners, a node that pulls the
// meeting from it, and ffmpeg publishers — each its own process, so a test can kill -9
// the primary publisher the way a platform's primary encoder or path dies. Every child
// is killed by `stopAll()`, and at exit by processes.mjs.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts, startChild, Proc, NodeProc, pollUntil } from './processes.mjs';

const q = (s) => JSON.stringify(String(s));

/** The MC's admin token (a meeting's stream key is shown to admins only) and its node
 * token (with an admin token set, the MC's streams are for holders of one of the two). */
const ADMIN = 'brdyun-e2e-admin-token-loopback-only';
const NODE_TOKEN = 'brdyun-e2e-node-token-loopback-only';
const asAdmin = { headers: { Authorization: `Bearer ${ADMIN}` } };


/** `kill -9` of one child by its pid; resolves once it has exited. */
export async function kill9(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  process.kill(child.pid, 'SIGKILL');
  await exited;
}

/** A `[defaults]` section with the keys whose value is given, or nothing. */
function defaultsSection(values) {
  const lines = Object.entries(values).filter(([, v]) => v !== undefined).map(([k, v]) => `${k} = ${v}`);
  return lines.length ? `[defaults]\n${lines.join('\n')}\n` : '';
}

/**
 * Starts an MC (RTMP and SRT on loopback, the started meeting `meeting` with no ladder;
 * `sourceTimeout` and `publishTimeout` seconds, when given, as `[defaults]
 * source_timeout` and `publish_timeout`; the product's defaults otherwise) and a node that
 * pulls it. Resolves with `{ dir, mc, node, key, rtmp, srt, publish, stopAll }` once both
 * listen and the meeting's stream key is known.
 */
export async function startPublishMc({ sourceTimeout, publishTimeout } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'brdyun-e2e-publish-'));
  const [mcHttp, rtmp, srt, nodeHttp] = await freePorts(4);
  const setup = { dir, children: [], rtmp, srt };
  const mcConfig = join(dir, 'mc.toml');
  writeFileSync(mcConfig, `[mc]
name = "mc"
trust_loopback = true
http = ${q(`127.0.0.1:${mcHttp}`)}
rtmp = ${q(`127.0.0.1:${rtmp}`)}
srt = ${q(`127.0.0.1:${srt}`)}
data_dir = ${q(join(dir, 'mc'))}
admin_token = ${q(ADMIN)}
node_token = ${q(NODE_TOKEN)}
${defaultsSection({ source_timeout: sourceTimeout, publish_timeout: publishTimeout })}
[[meeting]]
id = "meeting"
title = "e2e primary and backup publish"
start = true
ladder = false
`);
  setup.mc = new Proc({ role: 'mc', name: 'mc', configPath: mcConfig, logPath: join(dir, 'mc.log') });
  setup.mc.base = `http://127.0.0.1:${mcHttp}`;
  const nodeConfig = join(dir, 'node.toml');
  writeFileSync(nodeConfig, `[node]
name = "node-a"
trust_loopback = true
http = ${q(`127.0.0.1:${nodeHttp}`)}
data_dir = ${q(join(dir, 'node-a'))}
[mc]
url = ${q(setup.mc.base)}
token = ${q(NODE_TOKEN)}
poll_interval = 0.5
timeout = 2
`);
  setup.node = new NodeProc({ name: 'node-a', configPath: nodeConfig, logPath: join(dir, 'node-a.log'), http: nodeHttp });
  setup.stopAll = async () => {
    await Promise.all(setup.children.map(kill9));
    await Promise.all([setup.node, setup.mc].map((p) => p.kill9()));
    if (!process.env.E2E_KEEP) rmSync(dir, { recursive: true, force: true });
  };
  try {
    await setup.mc.start();
    await setup.node.start();
    const { value } = await pollUntil('the meeting and its stream key', async () => {
      const res = await fetch(`${setup.mc.base}/api/meetings/meeting`, asAdmin).catch(() => null);
      return res?.status === 200 ? (await res.json()).stream_key : null;
    }, { limitMs: 10_000 });
    setup.key = value;
  } catch (e) {
    await setup.stopAll();
    throw e;
  }
  /** The meeting's media playlist on the MC (as a node reads it), or the error. */
  setup.mcMedia = async () => {
    const res = await fetch(`${setup.mc.base}/meeting/mono.m3u8`, { headers: { Authorization: `Bearer ${NODE_TOKEN}` } }).catch((e) => e);
    return res instanceof Error ? String(res) : `${res.status}\n${await res.text()}`;
  };
  /** Starts ffmpeg sending `fixture` in real time, as is, to `url` in `format`. */
  setup.publish = (name, fixture, format, url) => {
    const child = startChild('ffmpeg', [
      '-nostdin', '-hide_banner', '-loglevel', 'error', '-re', '-i', fixture,
      '-c', 'copy', '-f', format, url,
    ], join(dir, `ffmpeg-${name}.log`));
    setup.children.push(child);
    return child;
  };
  return setup;
}

/**
 * Encodes `seconds` of a test pattern and tone into MPEG-TS at `path`, faster than
 * real time: H.264 with B-frames and a keyframe every 2 s (what platforms send), AAC.
 * Two publishers sending this file started together send the same frames with the
 * same timestamps, as one encoder's two outputs do; another `pattern` (a lavfi source)
 * and `tone` (Hz) make another encoder's feed.
 */
export async function encodeFixture(path, seconds, { pattern = 'testsrc2', tone = 440 } = {}) {
  const child = spawn('ffmpeg', [
    '-nostdin', '-hide_banner', '-loglevel', 'error', '-y',
    '-f', 'lavfi', '-i', `${pattern}=size=640x360:rate=25`,
    '-f', 'lavfi', '-i', `sine=frequency=${tone}`,
    '-c:v', 'libx264', '-preset', 'veryfast', '-g', '50', '-bf', '2',
    '-c:a', 'aac', '-t', String(seconds), '-f', 'mpegts', path,
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  const [code] = await once(child, 'exit');
  clearTimeout(timer);
  if (code !== 0) throw new Error(`encoding the fixture failed (${code}): ${stderr}`);
}

/** The meeting's inputs on the MC at `base` (`/api/streams/meeting`): `{ active, inputs }`. */
export async function meetingInputs(base) {
  const res = await fetch(`${base}/api/streams/meeting`, asAdmin).catch(() => null);
  if (res?.status !== 200) return null;
  return (await res.json()).inputs ?? null;
}

/**
 * The segments of a media playlist: URI, PDT (ms), duration (ms) and whether an
 * EXT-X-DISCONTINUITY comes before it.
 */
export function playlistEntries(text) {
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

/** The largest gap (ms) between a segment's end and the next one's PDT, within a period. */
export function largestPdtStep(list) {
  let largest = 0;
  for (let i = 1; i < list.length; i += 1) {
    if (list[i].disc) continue;
    largest = Math.max(largest, Math.abs(list[i].pdt - (list[i - 1].pdt + list[i - 1].dur)));
  }
  return largest;
}

/** The last lines of a log file, for a failing assertion to show. */
export function logTail(path, lines = 30) {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
