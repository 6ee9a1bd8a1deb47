// The demo's stream mode, notification -> updated prediction on the page (issue 12's goal: <= 5 ms
// median, the model in the Worker). Headless Chromium (tests/browser/helpers.js: the demo server,
// the page's models, the browser) on the simulated strap; per visit the page records every
// prediction's timing (?record=1: demo/ui/stream-inference.js) and the medians are taken over the
// predictions after the first `--skip` (warm-up: the model's first pushes, the JIT).
//
//   node bench/demo_latency.mjs [--visits 3] [--predictions 80] [--skip 10]
//
// Parts of each prediction's latency (ms): feed = the notification's arrival -> its chunks sent
// to the Worker (the feeder); pushes = the push answers back (Worker compute + two messages);
// pooled = pooled()'s answer after them; page = the panels writing the prediction.
import { demoModel, demoServer, launchChromium } from '../tests/browser/helpers.js';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  const v = i < 0 ? fallback : Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v < 0) throw new Error(`--${name} must be an integer >= 0`);
  return v;
};
const VISITS = arg('visits', 3), PREDICTIONS = arg('predictions', 80), SKIP = arg('skip', 10);
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };
const quantile = (a, q) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(q * s.length))]; };

const model = demoModel();
const server = await demoServer();
const browser = await launchChromium();
const rows = [];
try {
  for (let v = 0; v < VISITS; v++) {
    const page = await browser.newPage();
    await page.goto(`${server.url}?seed=${v + 1}&record=1${model.query}`);
    await page.waitForFunction((n) => (globalThis.sensorformerDemo?.recording()?.predictions?.length ?? 0) >= n, PREDICTIONS + SKIP, { timeout: 180_000 });
    const timings = await page.evaluate(() => globalThis.sensorformerDemo.recording().predictions.map((p) => p.timing).filter(Boolean));
    await page.close();
    const t = timings.slice(SKIP);
    const total = t.map((x) => x.feed + x.pushes + x.pooled + x.page);
    rows.push({ visit: v + 1, n: t.length, total: median(total), p90: quantile(total, 0.9), feed: median(t.map((x) => x.feed)), pushes: median(t.map((x) => x.pushes)), pooled: median(t.map((x) => x.pooled)), page: median(t.map((x) => x.page)) });
    console.error(`visit ${v + 1}: ${t.length} predictions, median ${rows.at(-1).total.toFixed(2)} ms`);
  }
} finally {
  await browser.close();
  await server.close();
  model.cleanup?.();
}
const f = (x) => x.toFixed(1);
console.log(`| visit (seed) | predictions | notification -> prediction, median ms | p90 ms | feed | pushes (Worker + messages) | pooled() | page |`);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows) console.log(`| ${r.visit} | ${r.n} | **${f(r.total)}** | ${f(r.p90)} | ${f(r.feed)} | ${f(r.pushes)} | ${f(r.pooled)} | ${f(r.page)} |`);
