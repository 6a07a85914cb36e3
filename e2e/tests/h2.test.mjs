// HTTP/2 over TLS: a node with a certificate plays in hls.js from its HTTPS
// listener, and Chromium fetches the playlists and segments over h2 (ALPN), LL-HLS
// blocking reloads included.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchBrowser } from '../lib/cluster.mjs';
import { Proc, freePorts, pollUntil } from '../lib/processes.mjs';

let dir;
let node;
let browser;
let base;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'brdyun-h2-'));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'],
  { stdio: 'ignore' });
  const [http, https] = await freePorts(2);
  const configPath = join(dir, 'node.toml');
  writeFileSync(configPath, `[node]
name = "h2"
http = "127.0.0.1:${http}"
https = "127.0.0.1:${https}"
tls_cert = "${cert}"
tls_key = "${key}"
data_dir = "${join(dir, 'data')}"
[defaults]
segment_duration = 1
part_duration = 0.5
[[stream]]
name = "m"
inputs = ["builtin://meeting"]
`);
  node = new Proc({ role: 'node', name: 'h2', configPath, logPath: join(dir, 'node.log') });
  await node.start();
  base = `https://127.0.0.1:${https}`;
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await node?.kill9();
  if (dir && !process.env.E2E_KEEP) rmSync(dir, { recursive: true, force: true });
});

for (const [label, file, lowLatency] of [['HLS', 'index.m3u8', false], ['LL-HLS', 'll-index.m3u8', true]]) {
  test(`hls.js plays ${label} over HTTPS, every request on h2`, { timeout: 90_000 }, async () => {
    // The certificate is self-signed: this page trusts it, as a viewer's browser trusts a real one.
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    const page = await context.newPage();
    try {
      await page.goto(`${base}/player/hls.min.js`);
      await page.setContent(`<video id="v" muted autoplay></video>`);
      await page.addScriptTag({ url: `${base}/player/hls.min.js` });
      const src = `${base}/m/${file}`;
      await page.evaluate(({ src, lowLatency }) => {
        const video = document.getElementById('v');
        const hls = new window.Hls({ lowLatencyMode: lowLatency });
        window.__errors = [];
        hls.on(window.Hls.Events.ERROR, (_, d) => { if (d.fatal) window.__errors.push(d.details); });
        hls.loadSource(src);
        hls.attachMedia(video);
        video.play().catch(() => {});
      }, { src, lowLatency });
      // The video clock starts at the stream's timestamps: six seconds from where it began.
      await pollUntil(`${label} plays 6 s`, () => page.evaluate(() => {
        const v = document.getElementById('v');
        if (!(v.currentTime > 0)) return false;
        window.__start ??= v.currentTime;
        return v.currentTime - window.__start > 6;
      }), { limitMs: 60_000 });
      const protocols = await page.evaluate(() => performance.getEntriesByType('resource')
        .filter((e) => e.name.includes('/m/'))
        .map((e) => ({ url: e.name, protocol: e.nextHopProtocol })));
      const blocking = protocols.filter((p) => p.url.includes('_HLS_msn='));
      if (process.env.H2_DEBUG) console.log(protocols.map((p) => p.url).join("\n"));
      console.log(`${label} over https: ${protocols.length} requests, protocols ${[...new Set(protocols.map((p) => p.protocol))].join(', ')}, ${blocking.length} blocking reload(s)`);
      // A request hls.js aborted (a blocking reload it no longer needs) has no protocol.
      const done = protocols.filter((p) => p.protocol);
      assert.ok(done.length > 10, JSON.stringify(protocols));
      assert.ok(done.every((p) => p.protocol === 'h2'), JSON.stringify(done.filter((p) => p.protocol !== 'h2').slice(0, 3)));
      if (lowLatency) assert.ok(blocking.length > 0, 'hls.js made blocking reloads over h2');
      assert.deepEqual(await page.evaluate(() => window.__errors), []);
    } finally {
      await context.close();
    }
  });
}
