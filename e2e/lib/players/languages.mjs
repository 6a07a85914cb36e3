// dash.js and Shaka with their audio languages exposed to a test: each `start(src)` runs
// in the page (after the player's script, `script`, is added) and sets `window.__p`:
// `tracks()` (the audio languages listed, as { lang, label, role }), `lang()` (the one
// playing), `pick(lang)` (switches to one) and `state.fatal` (fatal errors).
import { fileURLToPath } from 'node:url';

const DASH_JS = fileURLToPath(new URL('../../node_modules/dashjs/dist/modern/umd/dash.all.min.js', import.meta.url));
const SHAKA_JS = fileURLToPath(new URL('../../node_modules/shaka-player/dist/shaka-player.compiled.js', import.meta.url));

/** The players, by name: the script to add to the page and the page function to run. */
export const LANGUAGE_PLAYERS = {
  'dash.js': {
    script: DASH_JS,
    start: (src) => {
      const video = document.getElementById('v');
      const player = dashjs.MediaPlayer().create();
      player.updateSettings({ debug: { logLevel: dashjs.Debug.LOG_LEVEL_WARNING } });
      const state = { fatal: [] };
      // 25 (an MPD reload) and 27 (a segment) are retried by dash.js itself.
      player.on(dashjs.MediaPlayer.events.ERROR, (e) => {
        const code = e.error && e.error.code;
        if (code !== 25 && code !== 27) state.fatal.push(JSON.stringify(e.error || e).slice(0, 300));
      });
      const label = (t) => (t.labels && t.labels[0] ? (t.labels[0].text ?? t.labels[0]) : null);
      window.__p = {
        state,
        tracks: () => player.getTracksFor('audio').map((t) => ({
          lang: t.lang, label: label(t), role: (t.roles && t.roles[0] && (t.roles[0].value ?? t.roles[0])) || null,
        })),
        lang: () => { const t = player.getCurrentTrackFor('audio'); return t ? t.lang : null; },
        pick: (lang) => player.setCurrentTrack(player.getTracksFor('audio').find((t) => t.lang === lang)),
      };
      player.initialize(video, src, true);
    },
  },
  Shaka: {
    script: SHAKA_JS,
    start: (src) => {
      const video = document.getElementById('v');
      shaka.polyfill.installAll();
      const player = new shaka.Player();
      const state = { fatal: [] };
      player.addEventListener('error', (e) => {
        if (e.detail && e.detail.severity === 2) state.fatal.push(`${e.detail.code}`);
      });
      window.__p = {
        state,
        tracks: () => player.getAudioTracks().map((t) => ({ lang: t.language, label: t.label ?? null, role: (t.roles && t.roles[0]) || null })),
        lang: () => { const t = player.getAudioTracks().find((a) => a.active); return t ? t.language : null; },
        pick: (lang) => player.selectAudioTrack(player.getAudioTracks().find((t) => t.language === lang)),
      };
      player.attach(video).then(() => player.load(src)).then(() => video.play().catch(() => {}))
        .catch((e) => state.fatal.push(`load ${e && e.code}`));
    },
  },
};
