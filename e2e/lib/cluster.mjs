// Starts and stops brdyun processes for the end-to-end tests, and opens headless Chromium.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

export const BIN = process.env.BRDYUN_BIN || new URL('../../target/release/brdyun', import.meta.url).pathname;

/** Starts `brdyun demo --port PORT` and resolves once its nodes print their URLs. */
export async function startDemo(port) {
  const child = spawn(BIN, ['demo', '--port', String(port)], {
    env: { ...process.env, RUST_LOG: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  const urls = [];
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('demo did not start in 30 s')), 30_000);
    lines.on('line', (line) => {
      const m = line.match(/watch:\s+(\S+)/);
      if (m) urls.push(m[1]);
      if (line.startsWith('Ctrl-C')) { clearTimeout(timer); resolve(); }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`demo exited with ${code}`)); });
  });
  await ready;
  return { child, urls, stop: async () => { child.kill('SIGTERM'); await once(child, 'exit'); } };
}

/** Waits until `url` answers 200. */
export async function waitFor200(url, limitMs = 30_000) {
  const deadline = Date.now() + limitMs;
  for (;;) {
    try {
      const res = await fetch(url);
      if (res.status === 200) return await res.text();
    } catch { /* not up yet */ }
    if (Date.now() > deadline) throw new Error(`${url} not 200 within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Headless Chromium as this machine runs it (Debian's chromium, no network chatter). */
export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--autoplay-policy=no-user-gesture-required'],
  });
}
