// The stream mode's Rhythm card (issue 20) in headless Chromium: the AF model (models/af.safetensors,
// or a stand-in with its config and random weights while that file is not there) runs as a second
// streaming session fed from the simulated strap's ECG (µV from the device layer, mV to the model)
// and RR. With ?record=1 the page keeps every chunk it pushed to that session and every prediction:
// the test replays the chunks into an independent session in Node and compares the probabilities.
// Then "Start AF episode" (the simulator's truth turns to AF), the card in window mode, an AF
// model that does not load (the card says why, the rest of the page runs), and the card after its
// session stopped (its bars kept for the restarted session's results).
// Screenshot: test-artifacts/demo-rhythm.png.
//
// Every wait is for a condition with a deadline (helpers.waitFor). Nothing here depends on the
// model's accuracy (tools/af/simulated_accuracy.mjs measures that).
//
//   node --test tests/browser/demo-rhythm.test.js
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { beatModalities, loadModel } from '../../web/src/index.js';
import { AF_EPISODE_SECONDS, RHYTHM_NAMES, RHYTHM_SECONDS } from '../../demo/ui/rhythm.js';
import { CSP_HOOK, chunkFromPage, demoPageForTests, ensureArtifacts, log, missingSlots, pageRecording, repo, simulateDisconnect, waitFor, watch, windowFromChunks } from './helpers.js';

const SEED = 9912;  // the seed of the other demo tests
const OUTAGE = 1;   // s out of range: the device layer's first retry (2 s) gets the strap back
const { ctx, elapsed } = demoPageForTests('rhythm', `seed=${SEED}&outage=${OUTAGE}&record=1`);

// The card as shown: its label, state, status, and each bar's name, text and exact probability.
const CARD = () => ({
  hidden: document.querySelector('#rhythm-card').hidden,
  state: document.querySelector('#rhythm-label').dataset.state,
  label: document.querySelector('#rhythm-label').textContent,
  status: document.querySelector('#rhythm-status').textContent,
  bars: [...document.querySelectorAll('#rhythm-probs .rprob')].map((r) => ({
    name: r.querySelector('.name').textContent, text: r.querySelector('.p').textContent, p: r.dataset.p === '' ? null : Number(r.dataset.p), best: r.classList.contains('best'),
  })),
});

test('the Rhythm card waits for 30 s of ECG, then shows a label and four probabilities that sum to 1', async () => {
  const page = ctx.page;
  await waitFor(page, 'the Rhythm card waiting for 30 s of ECG', () => document.querySelector('#rhythm-label')?.dataset.state === 'waiting' && !document.querySelector('#rhythm-card').hidden);
  const waiting = await page.evaluate(CARD);
  assert.equal(waiting.label, `waiting for ${RHYTHM_SECONDS} s of ECG…`);
  assert.deepEqual(waiting.bars.map((b) => b.p), [null, null, null, null], 'bars before the first whole window');
  await waitFor(page, 'a rhythm label', () => document.querySelector('#rhythm-label').dataset.state === 'label');
  const shown = await page.evaluate(CARD);
  assert.deepEqual(shown.bars.map((b) => b.name), ['normal rhythm', 'atrial fibrillation', 'other rhythm', 'too noisy']);
  const sum = shown.bars.reduce((a, b) => a + b.p, 0);
  // 1e-6: four float32 probabilities (each within 6e-8 relative of its exact value) summed in float64.
  assert.ok(Math.abs(sum - 1) <= 1e-6, `the probabilities sum to ${sum}`);
  const best = shown.bars.findIndex((b) => b.best);
  assert.equal(shown.label, shown.bars[best].name, 'the label is the best bar\'s');
  // The numbers as text (not colour alone), one decimal, the status line's percentage the best bar's.
  for (const b of shown.bars) assert.equal(b.text, `${(100 * b.p).toFixed(1)} %`);
  assert.ok(shown.status.startsWith(`${shown.bars[best].text} · last ${RHYTHM_SECONDS} s`), shown.status);
  log('rhythm', `${elapsed()}: "${shown.label}" (${shown.bars.map((b) => b.text).join(', ')}; sum - 1 = ${(sum - 1).toExponential(1)})`);
});

test('the AF session gets the strap\'s ECG in mV and its RR, and its probabilities equal an independent session\'s in Node over the same chunks', async () => {
  const page = ctx.page;
  await waitFor(page, 'five rhythm predictions over a whole window', (s) =>
    globalThis.sensorformerDemo.rhythm()?.predictions.filter((p) => p.to - s >= p.referenceTime).length >= 5, RHYTHM_SECONDS);
  // The card first: what it shows is then in the recording (the page records a prediction before
  // it shows it).
  const card = await page.evaluate(CARD);
  const rec = await page.evaluate(pageRecording, 'rhythm');
  // the strap's ECG and RR, and the beat streams the feeder derives from the ECG by itself, one per
  // beat modality of the model (id "<ecg id>:<modality>", docs/bluetooth.md; the shipped file's
  // second and third models take one each: docs/models.md); the strap's other streams are left out
  const afModel = await loadModel(readFileSync(join(repo, ctx.model.afFile)), { warmup: false });
  const beatIds = beatModalities(afModel.config).map((g) => `ecg:${g.modality}`);
  afModel.dispose();
  assert.deepEqual(rec.streamIds, ['ecg', 'rr', ...beatIds], 'the AF session\'s streams');
  const first = (id) => rec.chunks.map((c) => c.streams[rec.streamIds.indexOf(id)]).find((s) => s?.modality);
  assert.deepEqual([first('ecg').sensor, first('ecg').modality, first('ecg').placement], [0, 'ecg', 'chest']);
  assert.ok(Math.abs(first('ecg').rateHz - 130) < 1.5, `the ECG declared at ${first('ecg').rateHz} Hz (the strap's measured rate)`);
  assert.deepEqual([first('rr').sensor, first('rr').modality, first('rr').placement], [0, 'rr', 'chest']);
  // Units: the H10 sends whole µV (what the feeder received); the session gets mV (the feeder's
  // scale 1e-3): every chunk value x 1000 is a whole number within float32's rounding (|x| < 4 mV:
  // 2.4e-7 mV, 2.4e-4 after x 1000), and an R wave is ~1 mV.
  const received = rec.received.ecg.filter((v) => v !== null);
  assert.ok(received.every((v) => Number.isInteger(v)) && Math.max(...received.map(Math.abs)) > 300, 'the device layer gives whole µV');
  const ecg = rec.chunks.flatMap((c) => c.streams[rec.streamIds.indexOf('ecg')]?.samples ?? []).filter((v) => v !== null && !Number.isNaN(v));
  // every received value less what the feeder still holds, each the received µV x 1e-3 in float32,
  // each at most as often as it was received. (Compared as multisets, not position by position:
  // the feeder gives a stream's samples in the order of their measured times, and when the clock
  // fit corrects itself by more than a sample period between the first frames, as it can on a
  // loaded machine where the first notifications come late, a frame's first samples are timed
  // before the previous frame's last and change places with them. Seen in CI: index 72, the first
  // frame's last sample.)
  assert.ok(ecg.length <= received.length && ecg.length > received.length - 400, `${ecg.length} of ${received.length} ECG values in chunks`);
  const left = new Map();
  for (const v of received) { const mv = Math.fround(v * 1e-3); left.set(mv, (left.get(mv) ?? 0) + 1); }
  const wrong = ecg.findIndex((v) => { const n = left.get(v) ?? 0; left.set(v, n - 1); return n <= 0; });
  assert.equal(wrong, -1, `chunk ECG value ${wrong}: ${ecg[wrong]} mV is no received µV x 1e-3 (or more often than received)`);
  assert.ok(ecg.length > 1000, `${ecg.length} ECG samples`);
  for (const v of ecg) assert.ok(Math.abs(v * 1000 - Math.round(v * 1000)) < 1e-3 && Math.abs(v) < 4, `ECG value ${v} is not a whole µV in mV`);
  const peak = Math.max(...ecg.map(Math.abs));
  assert.ok(peak > 0.3 && peak < 4, `largest |ECG| ${peak} mV`);
  const rr = rec.received.rr.filter((v) => v !== null);
  assert.ok(rr.length > 10 && rr.every((v) => v > 0.25 && v < 2), `RR intervals in seconds: ${rr.slice(0, 5)}`);

  // The same chunks, in order, into a session of the same file in Node; pooled over 30 s after the
  // chunk each prediction followed.
  const model = await loadModel(readFileSync(join(repo, ctx.model.afFile)));
  const session = model.stream({});
  let pushed = 0, checked = 0;
  try {
    for (const p of rec.predictions) {
      while (pushed < p.chunks) session.push(chunkFromPage(rec.chunks[pushed++]));
      const mine = session.pooled({ seconds: RHYTHM_SECONDS });
      assert.equal(mine.label, p.label, `label at frontier ${p.frontier}`);
      assert.deepEqual([mine.from, mine.to, mine.presentTokens], [p.from, p.to, p.presentTokens], `the pooled window at frontier ${p.frontier}`);
      if (!p.probabilities) continue;
      // The same .wasm, the same chunks, in the same order: the same float32 operations, so the
      // same numbers to the bit (Chromium's Worker and Node run one WebAssembly semantics).
      assert.deepEqual(Array.from(mine.probabilities), p.probabilities, `probabilities at frontier ${p.frontier}`);
      checked++;
    }
  } finally {
    session.dispose();
    model.dispose();
  }
  const shownP = card.bars.map((b) => b.p);
  const shownPrediction = rec.predictions.findLast((p) => p.probabilities && p.probabilities.every((v, k) => v === shownP[k]));
  assert.ok(shownPrediction, `the card's probabilities ${shownP} are no prediction of the session`);
  assert.equal(card.label, RHYTHM_NAMES[shownPrediction.label]);
  assert.ok(checked >= 5, `only ${checked} predictions checked`);
  log('rhythm', `${elapsed()}: ${checked} predictions = a Node session over ${rec.chunks.length} chunks (${ecg.length} ECG samples, peak ${peak.toFixed(3)} mV; ${rr.length} RR)`);
});

test('a simulated disconnect is a gap in the AF session too: the outage marked missing in its ECG, finality past the reconnect', async () => {
  const page = ctx.page;
  const { from, back } = await simulateDisconnect(page);
  await waitFor(page, 'the AF session\'s frontier past the reconnect', (t) => globalThis.sensorformerDemo.rhythm().predictions.at(-1)?.frontier > t + 1, back);
  const rec = await page.evaluate(pageRecording, 'rhythm');
  // The feeder's two ways to mark missing samples (a later startTime, an `until`), as the session
  // reads them: the ECG slots in [from, back + 1 s] that hold no sample.
  const ecg = windowFromChunks(rec.chunks, 0).streams[rec.streamIds.indexOf('ecg')];
  const { all: missing, within: inOutage } = missingSlots(ecg, from - 0.5, back + 1);
  assert.ok(inOutage.length >= Math.floor(OUTAGE * ecg.rateHz * 0.5), `the outage is not marked missing in the AF session's ECG: ${inOutage.length} missing samples in [${from}, ${back}] (${missing.length} in all)`);
  const logged = await page.$$eval('#log li', (els) => els.map((e) => `${e.dataset.kind}: ${e.querySelector('.text').textContent}`));
  assert.deepEqual(logged.filter((l) => /^error: AF model session|AF model: a new stream session/.test(l)), [], 'the AF session failed (a refused chunk, a restart)');
  log('rhythm', `${elapsed()}: outage ${from.toFixed(2)}-${back.toFixed(2)}: ${inOutage.length} ECG samples marked missing in the AF session`);
});

test('"Start AF episode": the simulator\'s strap goes into AF for 2 minutes, the card says so, one episode at a time', async () => {
  const page = ctx.page;
  const before = await page.evaluate(() => {
    const t = (performance.timeOrigin + performance.now()) / 1000;
    const truth = globalThis.sensorformerDemo.sim().truth;
    return { rhythm: truth.rhythmAt(t), episodes: truth.afEpisodes(-Infinity, Infinity).length, shown: document.querySelector('#rhythm-truth').dataset.rhythm, disabled: document.querySelector('#start-af').disabled, hidden: document.querySelector('#start-af').hidden };
  });
  assert.deepEqual(before, { rhythm: 'sinus', episodes: 0, shown: 'sinus', disabled: false, hidden: false });
  await page.click('#start-af');
  // The simulator starts it about a second later (after the beats it has drawn).
  await waitFor(page, 'AF in the simulator\'s truth and on the card', () => {
    const t = (performance.timeOrigin + performance.now()) / 1000;
    return globalThis.sensorformerDemo.sim().truth.rhythmAt(t) === 'af' && document.querySelector('#rhythm-truth').dataset.rhythm === 'af';
  });
  const during = await page.evaluate(() => ({
    episodes: globalThis.sensorformerDemo.sim().truth.afEpisodes(-Infinity, Infinity),
    text: document.querySelector('#rhythm-truth').textContent, disabled: document.querySelector('#start-af').disabled,
    logged: [...document.querySelectorAll('#log li')].map((li) => li.querySelector('.text').textContent).find((t) => /atrial fibrillation for/.test(t)) ?? null,
  }));
  assert.equal(during.episodes.length, 1);
  assert.ok(Math.abs(during.episodes[0].end - during.episodes[0].start - AF_EPISODE_SECONDS) < 1e-6, JSON.stringify(during.episodes));
  assert.match(during.text, /^simulator: atrial fibrillation \(episode ends in [12]:\d\d\)$/);
  assert.equal(during.disabled, true, 'a second episode cannot overlap the first: the button waits');
  assert.match(during.logged ?? '', new RegExp(`^atrial fibrillation for ${AF_EPISODE_SECONDS} s from `));
  log('rhythm', `${elapsed()}: AF from ${during.episodes[0].start.toFixed(2)} to ${during.episodes[0].end.toFixed(2)}: "${during.text}"`);
});

test('window mode hides the card and ends its session; back in stream mode a new one waits for 30 s', async () => {
  const page = ctx.page;
  await page.click('label[for="mode-window"]');
  await waitFor(page, 'the window mode without the card', () => document.querySelector('#mode').dataset.mode === 'window' && document.querySelector('#rhythm-card').hidden && globalThis.sensorformerDemo.rhythm() === null);
  await page.click('label[for="mode-stream"]');
  await waitFor(page, 'the card waiting again', () => !document.querySelector('#rhythm-card').hidden && document.querySelector('#rhythm-label').dataset.state === 'waiting' && globalThis.sensorformerDemo.rhythm() !== null);
});

test('an AF model that does not load: the card says why, the stream model still predicts', async () => {
  const page = await ctx.browser.newPage({ viewport: { width: 1280, height: 800 } });
  try {
    await page.addInitScript({ content: CSP_HOOK });
    const watcher = watch(page, ctx.server.url.replace(/\/$/, ''));
    await page.goto(`${ctx.server.url}?seed=${SEED}${ctx.model.query.replace(/&afModel=[^&]*/, '')}&afModel=missing-${process.pid}.safetensors`);
    await waitFor(page, 'the card saying the AF model is not available, and streamed predictions', () =>
      document.querySelector('#rhythm-label').dataset.state === 'unavailable' && Number(document.querySelector('#updates').dataset.count) >= 3);
    const shown = await page.evaluate(CARD);
    assert.equal(shown.label, 'not available');
    assert.match(shown.status, new RegExp(`did not load from missing-${process.pid}\\.safetensors \\(\\w+: .+\\); the rest of the page runs without it`));
    assert.deepEqual(shown.bars, []);
    // The only problems: the missing file's 404 (and Chromium's console line for it).
    const problems = (await watcher.problems()).filter((p) => !p.includes(`missing-${process.pid}.safetensors`) && !/Failed to load resource: .*404/.test(p));
    assert.deepEqual(problems, [], 'console errors, page errors, failed requests or CSP violations besides the missing file');
    log('rhythm', `${elapsed()}: no AF model: "${shown.status}"`);
  } finally {
    await page.close();
  }
});

test('the card after its session stopped: the bars stay, emptied, and the next session\'s result fills them', async () => {
  // The page's own card cannot be made to fail on demand (a chunk the core refuses), so the card's
  // class (the page's module, as main.js drives it on an AF session's 'error' and 'result') on
  // elements of its own: unavailable(), then the restarted session's waiting() and first result.
  const page = ctx.page;
  const seen = await page.evaluate(async () => {
    const { RhythmPanel } = await import('/ui/rhythm.js');
    const el = (tag) => document.createElement(tag);
    const panel = new RhythmPanel({ label: el('p'), probs: el('div'), status: el('p'), announce: el('p'), truth: el('p'), control: el('button') });
    const bars = () => [...panel.probs.querySelectorAll('.rprob')].map((r) => ({ name: r.querySelector('.name').textContent, p: r.dataset.p, best: r.classList.contains('best') }));
    panel.setLabels(['normal', 'af', 'other', 'noisy']);
    panel.update({ referenceTime: 1000, prediction: { from: 1000, to: 1030, label: 'normal', probabilities: [0.7, 0.1, 0.1, 0.1] } });
    panel.unavailable('The AF model\'s session stopped (TEST: a chunk refused). A new one starts in a moment.');
    const stopped = { state: panel.label.dataset.state, bars: bars() };
    panel.waiting();
    panel.update({ referenceTime: 2000, prediction: { from: 2000, to: 2030, label: 'af', probabilities: [0.125, 0.5, 0.25, 0.125] } });
    return { stopped, after: { state: panel.label.dataset.state, label: panel.label.textContent, bars: bars() } };
  });
  const names = ['normal rhythm', 'atrial fibrillation', 'other rhythm', 'too noisy'];
  assert.deepEqual(seen.stopped, { state: 'unavailable', bars: names.map((name) => ({ name, p: '', best: false })) }, 'the bars while the session is stopped');
  assert.deepEqual(seen.after, {
    state: 'label', label: 'atrial fibrillation',
    bars: names.map((name, i) => ({ name, p: String([0.125, 0.5, 0.25, 0.125][i]), best: i === 1 })),
  }, 'the restarted session\'s result on the card');
});

test('no console errors, no CSP violation; screenshot', async () => {
  const page = ctx.page;
  await page.evaluate(() => window.scrollTo(0, 0));
  const shot = join(ensureArtifacts(), 'demo-rhythm.png');
  await page.screenshot({ path: shot, fullPage: true });
  assert.deepEqual(await ctx.watch.problems(), [], 'console errors, page errors, failed requests or CSP violations');
  log('rhythm', `${elapsed()}: no console error; screenshot ${shot}`);
});
