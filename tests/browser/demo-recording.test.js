// The demo page with a recording from disk (issue 21): "Open a recording…" takes the .txt files of
// a Polar Sensor Logger export (written here: 40 s of ACC at 51.7 Hz with a lost stretch, heart
// rate once a second, PPG the models have no input for), the package's reader reads them in the
// page, and the export plays at its real pace through the same takers as a live device: the
// stream model's session gets every ACC and HR row once (the page's recording of what its feeder
// received and gave), predictions and the look-back attention follow, the traces draw, and the
// page says when the recording has ended. A file that is not an export gets a notice, not a
// broken page. A second recording then starts from a reset card and look-back strip and plays,
// and "Back to the simulator" gets the simulated devices streaming again (a recording's player
// closes without a promise: the switch must not stop there). Screenshot:
// test-artifacts/demo-recording.png.
//
//   node --test tests/browser/demo-recording.test.js
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';

import { artifacts, canvasStats, demoPageForTests, log, waitFor } from './helpers.js';

const { ctx, elapsed } = demoPageForTests('recording', 'seed=4242&record=1');

// The export: phone times 1.5 s after the sensor's (Polar's epoch 2000-01-01 + 704201974 s is
// 2022-04-25T11:39:34 as UTC). ACC samples 19.34 ms apart; samples 600-649 were never received.
const NS0 = 704201974000000000n, T0 = 946684800 + 704201974;
const SECONDS = 40, ACC_STEP_NS = 19340000n, LOST = [600, 650];
const phone = (s) => new Date(Math.round((T0 + s) * 1000)).toISOString().slice(0, 23);
function exportFiles() {
  const acc = ['Phone timestamp;sensor timestamp [ns];X [mg];Y [mg];Z [mg]'];
  const n = Math.floor(SECONDS / 0.01934);
  let rows = 0;
  for (let k = 0; k < n; k++) {
    if (k >= LOST[0] && k < LOST[1]) continue;
    const s = Number(BigInt(k) * ACC_STEP_NS) / 1e9;
    // an arm swinging at 1.8 Hz (walking) on gravity's 1000 mG
    acc.push(`${phone(1.5 + s)};${NS0 + BigInt(k) * ACC_STEP_NS};${Math.round(400 * Math.sin(2 * Math.PI * 1.8 * s))};${Math.round(-1000 + 150 * Math.cos(2 * Math.PI * 1.8 * s))};${k % 7}`);
    rows++;
  }
  const hr = ['Phone timestamp;HR [bpm]'];
  for (let k = 0; k < SECONDS; k++) hr.push(`${phone(2.2 + k)};${100 + (k % 5)}`);
  const ppg = ['Phone timestamp;sensor timestamp [ns];channel 0;channel 1;channel 2;ambient'];
  for (let k = 0; k < 200; k++) ppg.push(`${phone(0.9 + k / 55)};${NS0 + BigInt(k) * 18181818n};${260000 + k};${270000 + k};${280000 + k};-600;`);
  return {
    files: [
      { name: 'Polar_Sense_ACC.txt', mimeType: 'text/plain', buffer: Buffer.from(`${acc.join('\n')}\n`) },
      { name: 'Polar_Sense_HR.txt', mimeType: 'text/plain', buffer: Buffer.from(`${hr.join('\n')}\n`) },
      { name: 'Polar_Sense_PPG.txt', mimeType: 'text/plain', buffer: Buffer.from(`${ppg.join('\n')}\n`) },
    ],
    accRows: rows, hrRows: SECONDS,
  };
}

test('a file that is not an export: a notice naming the problem, the simulator keeps running', async () => {
  const page = ctx.page;
  await waitFor(page, 'the simulated source', () => document.querySelector('#source-name')?.textContent === 'Simulated wearable');
  await page.setInputFiles('#export-files', [{ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('time,x\n1,2\n') }]);
  await waitFor(page, 'a notice', () => !document.querySelector('#notice').hidden);
  assert.match(await page.textContent('#notice-text'), /^Could not read the recording: notes\.txt:1: not a Polar Sensor Logger export/);
  assert.equal(await page.textContent('#source-name'), 'Simulated wearable');
});

test('a Polar Sensor Logger export plays at its real pace into the stream session: every ACC and HR row given once, predictions and maps, then the end', async () => {
  const page = ctx.page;
  const { files, accRows, hrRows } = exportFiles();
  await page.click('#notice-close');
  await page.setInputFiles('#export-files', files);
  await waitFor(page, 'the recording source', () => document.querySelector('#source-name')?.textContent?.startsWith('Recording: '));
  assert.equal(await page.textContent('#source-name'), 'Recording: ACC, HR, PPG');
  assert.equal(await page.isHidden('#use-simulator'), false, 'the way back to the simulator');
  // predictions from the recording's ACC and HR, and the look-back strip drawn
  await waitFor(page, 'predictions from the recording', () => Number(document.querySelector('#updates')?.dataset.count) >= 3 && document.querySelector('.prob.best'));
  await waitFor(page, 'keys on the look-back strip', () => Number(document.querySelector('#lookback').dataset.keys) > 0);
  const traces = await canvasStats(page, 'canvas.trace[data-stream="acc_x"]');
  assert.ok(traces.nonBackground > 200, `the traces are empty: ${JSON.stringify(traces)}`);
  // the whole recording (40 s at real pace), then the page says it ended
  await waitFor(page, 'the end of the recording', () => document.querySelector('#devices .device')?.dataset.state === 'closed', undefined, { timeout: 90_000 });
  // At the end the feeder holds nothing back for late samples: every row is given to the session
  // (the card's last prediction covers the recording to its end).
  await waitFor(page, 'every row given', () => {
    const f = globalThis.sensorformerDemo.feed();
    return f && ['acc_x', 'acc_y', 'acc_z', 'hr'].every((id) => f[id].pending === 0);
  });
  const feed = await page.evaluate(() => globalThis.sensorformerDemo.stats() && globalThis.sensorformerDemo.feed());
  // ... and the last prediction reaches the recording's last ACC sample, (n - 1) x 19.34 ms =
  // 39.98 s after its first (the final flush makes its last tokens final, as the CLI's replay
  // does; without it the session stopped a patch and the feeder's lateness short, near 39.6 s).
  // 0.08 s: the feeder's grid starts within half a slot of the first sample, at its measured rate.
  const lastSample = (Math.floor(SECONDS / 0.01934) - 1) * 0.01934;
  const reached = await page.evaluate(() => {
    const r = globalThis.sensorformerDemo.recording();
    return r.predictions[r.predictions.length - 1].frontier;
  }) - feed.acc_x.startTime;
  assert.ok(reached >= lastSample - 0.08, `the last prediction reaches ${reached.toFixed(3)} s of the recording, its last sample is at ${lastSample.toFixed(3)} s`);
  for (const id of ['acc_x', 'acc_y', 'acc_z']) {
    assert.equal(feed[id].received, accRows, `${id}: rows received by the feeder`);
    assert.equal(feed[id].given, accRows, `${id}: rows given to the session`);
    assert.equal(feed[id].beforeFrontier, 0, `${id}: none late`);
  }
  assert.equal(feed.hr.received, hrRows, 'hr rows');
  assert.equal(feed.hr.given, hrRows, 'hr rows given to the session');
  // the lost stretch (50 samples, ~0.97 s) is missing slots, not dropped data and not invented
  assert.ok(feed.acc_x.missing >= 45, `acc_x: ${feed.acc_x.missing} missing slots for 50 lost samples`);
  const logText = await page.$$eval('#log li .text', (els) => els.map((e) => e.textContent).join('\n'));
  assert.match(logText, /the recording ended \(every sample delivered\)/);
  await page.screenshot({ path: join(artifacts, 'demo-recording.png'), fullPage: true });
  // no page error (a panel that throws stops redrawing), console error or CSP violation
  assert.deepEqual(await ctx.watch.problems(), [], 'console errors, page errors, failed requests or CSP violations');
  log('recording', `${elapsed()}: acc ${feed.acc_x.received} received, ${feed.acc_x.given} given, ${feed.acc_x.missing} missing; hr ${feed.hr.received}; traces ${traces.nonBackground} px`);
});

// The card and the look-back strip as the page shows them (the activity's bars: .prob).
const SHOWN = () => ({
  name: document.querySelector('#source-name').textContent,
  caption: document.querySelector('#lookback-caption').textContent,
  predicted: document.querySelector('#predicted').textContent,
  bars: [...document.querySelectorAll('#probs .prob')].map((r) => r.dataset.p),
  best: document.querySelectorAll('#probs .prob.best').length,
});

test('a second recording after the first: the card and the look-back start afresh, and the new one plays', async () => {
  const page = ctx.page;
  // The first recording's last prediction is still shown (it ended: no newer one replaces it).
  const before = await page.evaluate(SHOWN);
  assert.match(before.caption, /^newest token: /, JSON.stringify(before));
  assert.match(before.predicted, /^(rest|walk|run)$/, JSON.stringify(before));
  // What the page shows once it has named the new source: a MutationObserver reads it in the same
  // task as the switch (a first result of the new source comes in a later task, from the Worker).
  await page.evaluate(() => {
    const name = document.querySelector('#source-name');
    const observer = new MutationObserver(() => {
      observer.disconnect();
      window.__atSwitch = {  // SHOWN's fields (a function does not cross into the page)
        name: name.textContent,
        caption: document.querySelector('#lookback-caption').textContent,
        predicted: document.querySelector('#predicted').textContent,
        bars: [...document.querySelectorAll('#probs .prob')].map((r) => r.dataset.p),
        best: document.querySelectorAll('#probs .prob.best').length,
      };
    });
    observer.observe(name, { childList: true, characterData: true, subtree: true });
  });
  await page.setInputFiles('#export-files', exportFiles().files);
  await waitFor(page, 'the page switched to the second recording', () => window.__atSwitch);
  const atSwitch = await page.evaluate(() => window.__atSwitch);
  assert.equal(atSwitch.name, 'Recording: ACC, HR, PPG');
  assert.deepEqual(
    { caption: atSwitch.caption, predicted: atSwitch.predicted, bars: atSwitch.bars, best: atSwitch.best },
    { caption: 'waiting for the first final token…', predicted: '–', bars: before.bars.map(() => ''), best: 0 },
    'the first recording\'s prediction and look-back were still shown for the second');
  // It plays (the first one's close must not stop the switch): its samples, then predictions.
  // (the first one's device was 'closed' at its end; the new source has none until it plays)
  await waitFor(page, 'the second recording playing', () => document.querySelector('#devices .device[data-kind="recording"]')?.dataset.state === 'streaming');
  await waitFor(page, 'a prediction from the second recording', () => document.querySelector('#predicted').textContent !== '–' && /^newest token: /.test(document.querySelector('#lookback-caption').textContent));
  log('recording', `${elapsed()}: second recording: card and look-back reset at the switch, then "${await page.textContent('#predicted')}"`);
});

test('"Back to the simulator" from a playing recording: the simulated devices stream again', async () => {
  const page = ctx.page;
  await page.click('#use-simulator');
  await waitFor(page, 'the simulator streaming again', () => document.querySelector('#source-name').textContent === 'Simulated wearable' &&
    ['strap', 'thermometer', 'oximeter'].every((k) => document.querySelector(`#devices .device[data-kind="${k}"]`)?.dataset.state === 'streaming') &&
    document.querySelector('#live-tag').dataset.state === 'on');
  // The strap's ECG (none in the recording) on its trace, and newer samples after that.
  await waitFor(page, 'the ECG trace drawing', () => Number(document.querySelector('canvas.trace[data-stream="ecg"]').dataset.points) > 0);
  const newest = Number(await page.getAttribute('canvas.trace[data-stream="ecg"]', 'data-newest'));
  await waitFor(page, 'newer ECG samples', (t) => Number(document.querySelector('canvas.trace[data-stream="ecg"]').dataset.newest) > t + 1, newest);
  // the recording let go: no device of it left
  assert.equal(await page.$$eval('#devices .device[data-kind="recording"]', (els) => els.length), 0);
  assert.deepEqual(await ctx.watch.problems(), [], 'console errors, page errors, failed requests or CSP violations');
  log('recording', `${elapsed()}: back to the simulator: strap, thermometer and oximeter streaming`);
});
