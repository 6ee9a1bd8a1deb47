// A real Polar Verity Sense recording (a Polar Sensor Logger export) through the whole stack with
// the armband model (demo/model/armband.safetensors: rest / walk / run, trained on the simulated
// armband only; issue 21 item 3). The recording has no labels: this reports what the model says
// over the interval its MARKER file marks, and accounts for every sample.
//
//   node tools/demo/armband_export.mjs --data <export folder> [--model demo/model/armband.safetensors] [--json out.json]
//
// 1. Windows: the CLI, `sensorformer run --input <folder> --window 10 --hop 5` (a child process,
//    as a user runs it): each window's label and probabilities; the windows wholly inside the
//    marked interval are summarised (label counts, mean probabilities).
// 2. A streaming session: the export replayed at its recorded pace into model.stream() through the
//    device layer's feeder (replayPolarLoggerIntoSession, the CLI `stream`'s path); per stream the
//    feeder's accounting (received = given + pending + before the frontier; the streams the model
//    has no modality for are left out by name, with their counts); the session's pooled
//    prediction (the last 10 s) after every step inside the marked interval, summarised the same way.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { loadModel, readPolarLogger } from '../../web/src/index.js';
import { replayPolarLoggerIntoSession } from '../../web/src/ble/session.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const WINDOW = 10, HOP = 5;

/** The marked interval [start, stop) in the export's host seconds (its first start and the stop after it). */
export function markedInterval(result) {
  const start = result.markers.find((m) => m.kind === 'start')?.time;
  const stop = result.markers.find((m) => m.kind === 'stop' && m.time > start)?.time;
  if (!(start < stop)) throw new Error('the export has no MARKER_START ... MARKER_STOP interval');
  return { start, stop };
}

function summarise(labels, rows) {
  const counts = Object.fromEntries(labels.map((l) => [l, 0]));
  const mean = new Array(labels.length).fill(0);
  for (const r of rows) {
    counts[r.label]++;
    r.probabilities.forEach((p, i) => { mean[i] += p / rows.length; });
  }
  return { count: rows.length, counts, meanProbabilities: Object.fromEntries(labels.map((l, i) => [l, mean[i]])) };
}

const softmax = (z) => {
  const m = Math.max(...z), e = z.map((v) => Math.exp(v - m)), s = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / s);
};

export async function armbandOnExport(folder, modelPath = join(ROOT, 'demo/model/armband.safetensors')) {
  const result = await readPolarLogger(folder);
  const marked = markedInterval(result);
  const model = await loadModel(readFileSync(modelPath));
  const labels = model.config.labels;

  // 1. Windows, through the CLI.
  const dir = mkdtempSync(join(tmpdir(), 'sf-armband-'));
  let windows;
  try {
    const out = join(dir, 'windows.json');
    execFileSync(process.execPath, [join(ROOT, 'web/bin/sensorformer.js'), 'run', '--model', modelPath, '--input', folder,
      '--window', String(WINDOW), '--hop', String(HOP), '--output', out], { stdio: ['ignore', 'ignore', 'pipe'] });
    windows = JSON.parse(readFileSync(out, 'utf8')).windows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const windowRows = windows.map((w) => {
    const probabilities = softmax(w.head);
    return { from: w.referenceTime, to: w.referenceTime + WINDOW, label: labels[probabilities.indexOf(Math.max(...probabilities))], probabilities };
  });
  const inside = windowRows.filter((w) => w.from >= marked.start && w.to <= marked.stop);

  // 2. A streaming session.
  const session = model.stream({ historySeconds: WINDOW });
  const pooled = [];
  let accounting;
  try {
    accounting = await replayPolarLoggerIntoSession(result, session, {
      config: model.config,
      placement: model.config.placements[0],  // as the CLI: the export has none; the model's first
      between: () => {
        const f = session.frontier;
        if (f - WINDOW >= marked.start && f <= marked.stop) {
          const p = session.pooled({ seconds: WINDOW });
          if (p.probabilities) pooled.push({ at: f, label: p.label, probabilities: Array.from(p.probabilities) });
        }
      },
    });
  } finally {
    session.dispose();
    model.dispose();
  }
  return {
    data: folder, model: modelPath, labels, marked, windowSeconds: WINDOW, hopSeconds: HOP,
    windows: { total: windowRows.length, marked: summarise(labels, inside) },
    stream: { marked: summarise(labels, pooled), stats: accounting.stats, leftOut: accounting.leftOut },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { data: { type: 'string' }, model: { type: 'string' }, json: { type: 'string' } } });
  if (!values.data) {
    console.error('usage: node tools/demo/armband_export.mjs --data <Polar Sensor Logger export folder> [--model M] [--json out.json]');
    process.exit(2);
  }
  const r = await armbandOnExport(values.data, values.model);
  const iso = (t) => new Date(t * 1000).toISOString().slice(11, 19);
  const pct = (x) => `${(100 * x).toFixed(1)} %`;
  const line = (s) => `${s.count} | ${r.labels.map((l) => s.counts[l]).join(' / ')} | ${r.labels.map((l) => pct(s.meanProbabilities[l])).join(' / ')}`;
  console.log(`export ${r.data}, model ${r.model.replace(ROOT, '')}; marked interval ${iso(r.marked.start)}-${iso(r.marked.stop)} (${(r.marked.stop - r.marked.start).toFixed(0)} s, the export's times)\n`);
  console.log(`| path | predictions in the marked interval | ${r.labels.join(' / ')} | mean probability ${r.labels.join(' / ')} |`);
  console.log('|---|---|---|---|');
  console.log(`| windows (CLI run, ${r.windowSeconds} s every ${r.hopSeconds} s; ${r.windows.total} in the export) | ${line(r.windows.marked)} |`);
  console.log(`| streaming session (pooled last ${r.windowSeconds} s, after every 1 s step) | ${line(r.stream.marked)} |`);
  console.log('\n| stream | received | given | given as missing (events without a value) | pending | before the frontier |');
  console.log('|---|---|---|---|---|---|');
  for (const [id, s] of Object.entries(r.stream.stats)) console.log(`| ${id} | ${s.received} | ${s.given} | ${s.kind === 'event' ? s.missing : '–'} | ${s.pending} | ${s.beforeFrontier} |`);
  for (const [id, s] of Object.entries(r.stream.leftOut)) console.log(`| ${id} | ${s.received} | left out: the model has no ${id} modality | | | |`);
  if (values.json) writeFileSync(values.json, `${JSON.stringify(r, null, 1)}\n`);
}
