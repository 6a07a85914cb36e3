// An MC pair for the end-to-end tests (docs/mc-pair.md): a real etcd on loopback, two
// `brdyun mc` processes that follow each other's timeline, one ffmpeg publishing the
// same MPEG-TS to both over UDP (a dual publish), and nodes that list both MCs. Every
// child is killed by `stopAll()`, and by the process-exit hooks of processes.mjs.
import { once } from 'node:events';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts, startChild, Proc, NodeProc } from './processes.mjs';

async function killChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

const q = (s) => JSON.stringify(String(s));

/**
 * Starts etcd, ffmpeg, MCs `mc1` and `mc2` (meeting `meeting`, fed by the UDP dual
 * publish) and one node per name. Resolves once every process listens.
 */
export async function startMcPair({ names = ['a'] } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'brdyun-e2e-pair-'));
  const [etcdClient, etcdPeer, http1, http2, udp1, udp2, ...nodePorts] = await freePorts(6 + names.length);
  const pair = { dir, mcs: {}, nodes: {}, children: [] };
  pair.stopAll = async () => {
    const all = [...Object.values(pair.nodes), ...Object.values(pair.mcs)];
    for (const p of all) p.resume();
    await Promise.all(all.map((p) => p.kill9()));
    await Promise.all(pair.children.map(killChild));
    if (!process.env.E2E_KEEP) rmSync(dir, { recursive: true, force: true });
  };
  try {
    const etcdUrl = `http://127.0.0.1:${etcdClient}`;
    pair.children.push(startChild('etcd', [
      '--name=e0', `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`, `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=e0=http://127.0.0.1:${etcdPeer}`,
    ], join(dir, 'etcd.log')));
    const mcs = [['mc1', http1, http2, udp1], ['mc2', http2, http1, udp2]];
    for (const [name, http, peer, udp] of mcs) {
      const configPath = join(dir, `${name}.toml`);
      writeFileSync(configPath, `[mc]
name = ${q(name)}
trust_loopback = true
http = ${q(`127.0.0.1:${http}`)}
data_dir = ${q(join(dir, name))}
etcd = [${q(etcdUrl)}]
peers = [${q(`http://127.0.0.1:${peer}`)}]
[[meeting]]
id = "meeting"
title = "e2e dual publish"
start = true
inputs = [${q(`udp://127.0.0.1:${udp}`)}]
`);
      pair.mcs[name] = new Proc({ role: 'mc', name, configPath, logPath: join(dir, `${name}.log`) });
      pair.mcs[name].http = http;
      pair.mcs[name].base = `http://127.0.0.1:${http}`;
    }
    // The MC waits for etcd at start (it serves its last view meanwhile): start etcd first.
    await new Promise((r) => setTimeout(r, 1_000));
    await Promise.all(Object.values(pair.mcs).map((mc) => mc.start()));
    const tee = [udp1, udp2].map((p) => `[f=mpegts:onfail=ignore]udp://127.0.0.1:${p}?pkt_size=1316`).join('|');
    pair.children.push(startChild('ffmpeg', [
      '-nostdin', '-hide_banner', '-loglevel', 'error',
      '-re', '-f', 'lavfi', '-i', 'testsrc2=size=640x360:rate=25',
      '-re', '-f', 'lavfi', '-i', 'sine=frequency=440',
      '-c:v', 'libx264', '-preset', 'veryfast', '-g', '50', '-bf', '2',
      '-c:a', 'aac', '-t', '600', '-map', '0:v', '-map', '1:a', '-f', 'tee', tee,
    ], join(dir, 'ffmpeg.log')));
    names.forEach((name, i) => {
      const configPath = join(dir, `node-${name}.toml`);
      writeFileSync(configPath, `[node]
name = ${q(`node-${name}`)}
trust_loopback = true
http = ${q(`127.0.0.1:${nodePorts[i]}`)}
data_dir = ${q(join(dir, `node-${name}`))}
[mc]
urls = [${q(`http://127.0.0.1:${http1}`)}, ${q(`http://127.0.0.1:${http2}`)}]
poll_interval = 0.5
timeout = 2
`);
      pair.nodes[name] = new NodeProc({ name: `node-${name}`, configPath, logPath: join(dir, `node-${name}.log`), http: nodePorts[i] });
    });
    await Promise.all(Object.values(pair.nodes).map((n) => n.start()));
  } catch (e) {
    await pair.stopAll();
    throw e;
  }
  return pair;
}

/** The inputs of the meeting's stream on a process, from `/api/streams`. */
export async function meetingInputs(base) {
  const res = await fetch(`${base}/api/streams`);
  const body = await res.json();
  const stream = (body.streams || []).find((s) => s.name === 'meeting');
  return stream ? stream.inputs : null;
}
