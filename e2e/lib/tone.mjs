// Hearing what a page's <video> plays: an AnalyserNode of the Web Audio API on the
// element (its audio goes to the analyser only, never to the speakers), read for the
// loudest frequency. The test sources speak in tones, one per language, so the tone
// heard names the language playing.
import assert from 'node:assert/strict';

/** Routes the audio of the <video> `selector` on `page` into an analyser (unmuting
 * the element: a muted element gives the graph silence). */
export async function listen(page, selector = 'video') {
  await page.evaluate((sel) => {
    const video = document.querySelector(sel);
    video.muted = false;
    const context = new AudioContext();
    const analyser = context.createAnalyser();
    analyser.fftSize = 8192;
    context.createMediaElementSource(video).connect(analyser);
    const bins = new Float32Array(analyser.frequencyBinCount);
    window.__tone = () => {
      analyser.getFloatFrequencyData(bins);
      let best = 0;
      for (let i = 1; i < bins.length; i += 1) if (bins[i] > bins[best]) best = i;
      return { hz: (best * context.sampleRate) / analyser.fftSize, db: bins[best], time: video.currentTime, context: context.state };
    };
  }, selector);
}

/** Waits until `page` plays the tone `hz` (within 5 %, louder than -80 dB) for five
 * samples in a row, 100 ms apart, at most `limitMs`; resolves with how long that took. */
export async function hear(page, hz, what, limitMs = 20_000) {
  const started = Date.now();
  let inRow = 0;
  let last;
  while (Date.now() - started < limitMs) {
    last = await page.evaluate(() => window.__tone());
    inRow = Math.abs(last.hz - hz) < hz * 0.05 && last.db > -80 ? inRow + 1 : 0;
    if (inRow >= 5) return Date.now() - started;
    await page.waitForTimeout(100);
  }
  assert.fail(`${what}: never heard ${hz} Hz; last ${JSON.stringify(last)}`);
}
