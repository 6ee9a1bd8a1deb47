// The demo page with a recording from disk (issue 21): "Open a recording…" takes the .txt files of
// a Polar Sensor Logger export (written here: 40 s of ACC at 51.7 Hz with a lost stretch, heart
// rate once a second, PPG the models have no input for), the package's reader reads them in the
// page, and the export plays at its real pace through the same takers as a live device: the
// stream model's session gets every ACC and HR row once (the page's recording of what its feeder
// received and gave), predictions and the look-back attention follow, the traces draw, and the
// page says when the recording has ended. A file that is not an export gets a notice, not a
// broken page. Screenshot: test-artifacts/demo-recording.png.
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
  const feed = await page.evaluate(() => globalThis.sensorformerDemo.stats() && globalThis.sensorformerDemo.feed());
  for (const id of ['acc_x', 'acc_y', 'acc_z']) {
    assert.equal(feed[id].received, accRows, `${id}: rows received by the feeder`);
    assert.equal(feed[id].beforeFrontier, 0, `${id}: none late`);
  }
  assert.equal(feed.hr.received, hrRows, 'hr rows');
  // the lost stretch (50 samples, ~0.97 s) is missing slots, not dropped data and not invented
  assert.ok(feed.acc_x.missing >= 45, `acc_x: ${feed.acc_x.missing} missing slots for 50 lost samples`);
  const logText = await page.$$eval('#log li .text', (els) => els.map((e) => e.textContent).join('\n'));
  assert.match(logText, /the recording ended \(every sample delivered\)/);
  await page.screenshot({ path: join(artifacts, 'demo-recording.png'), fullPage: true });
  // no page error (a panel that throws stops redrawing), console error or CSP violation
  assert.deepEqual(await ctx.watch.problems(), [], 'console errors, page errors, failed requests or CSP violations');
  log('recording', `${elapsed()}: acc ${feed.acc_x.received} received, ${feed.acc_x.given} given, ${feed.acc_x.missing} missing; hr ${feed.hr.received}; traces ${traces.nonBackground} px`);
});
