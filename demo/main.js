// The demo page: a wearable (simulated by default, or real over Web Bluetooth) -> the package's
// device layer -> one WindowAssembler -> the model in a Web Worker, once a second -> prediction,
// attention maps and live traces.
//
// Query parameters:
//   model=URL          weights (default model/demo.safetensors, relative to this page)
//   source=bluetooth   use navigator.bluetooth at once, without a click (a page where a test
//                      injected a fake; real browsers need the Connect button's click)
//   outage=SECONDS     how long "Simulate disconnect" keeps the strap out of range (0-3600, default 3)
//   dropout=P          probability that the simulator loses a notification (0-1, default 0.005)
//   seed=N             the simulator's seed, an integer 0 to 2^53-1 (default: a random one, shown on
//                      the source name and in the event log, so ?seed=N replays a visit's signals;
//                      the tests always pass one)
//   schedule=random    the simulator's own activity schedule instead of the rest/walk/run tour
// A value out of range or not a number is ignored with a notice that says so; the default is used.
import { bluetoothAvailability } from '../web/src/ble/index.js';
import { AttentionPanel } from './ui/attention-panel.js';
import { $, clockTime, h } from './ui/dom.js';
import { InferenceLoop } from './ui/inference.js';
import { PredictionPanel } from './ui/prediction.js';
import { Session } from './ui/source.js';
import { KEY_COLOR, QUERY_COLOR } from './ui/streams.js';
import { TracesPanel } from './ui/traces-panel.js';

const params = new URLSearchParams(location.search);
const badParams = [];
function numberParam(name, fallback, { min, max, integer = false }) {
  if (!params.has(name)) return fallback;
  const raw = params.get(name);
  const v = raw.trim() === '' ? NaN : Number(raw);
  if (Number.isFinite(v) && v >= min && v <= max && (!integer || Number.isInteger(v))) return v;
  badParams.push(`${name}=${raw} (${integer ? 'an integer' : 'a number'} from ${min} to ${max})`);
  return fallback;
}
const MODEL_URL = params.get('model') || 'model/demo.safetensors';
const OUTAGE_SECONDS = numberParam('outage', 3, { min: 0, max: 3600 });
const DROPOUT = numberParam('dropout', 0.005, { min: 0, max: 1 });
const SEED = numberParam('seed', null, { min: 0, max: Number.MAX_SAFE_INTEGER, integer: true }) ?? Math.floor(Math.random() * 2 ** 32);
let SCHEDULE = params.get('schedule') ?? 'tour';
if (SCHEDULE !== 'tour' && SCHEDULE !== 'random') {
  badParams.push(`schedule=${SCHEDULE} (tour or random)`);
  SCHEDULE = 'tour';
}

// Content-Security-Policy violations are bugs of this page: say so loudly.
let violations = 0;
document.addEventListener('securitypolicyviolation', (e) => {
  violations++;
  document.documentElement.dataset.cspViolations = String(violations);
  console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI || 'inline code'} (${e.sourceFile}:${e.lineNumber})`);
});

// --- panels ---------------------------------------------------------------------------------
const log = $('#log');
function addLog({ kind, text, time }) {
  log.prepend(h('li', { dataset: { kind, time: time.toFixed(3) } }, h('time', {}, clockTime(time)), h('span', { class: 'kind' }, kind), h('span', { class: 'text' }, text)));
  while (log.children.length > 40) log.lastElementChild.remove();
}

const notice = $('#notice');
function showNotice(text, tone = 'info') {
  $('#notice-text').textContent = text;
  notice.dataset.tone = tone;
  notice.hidden = false;
}
$('#notice-close').addEventListener('click', () => { notice.hidden = true; });
if (badParams.length) showNotice(`Ignored ${badParams.join('; ')}: using the default${badParams.length > 1 ? 's' : ''}.`, 'warn');

const traces = new TracesPanel($('#traces'), $('#time-axis'), $('#gap-indicator'));
const prediction = new PredictionPanel({
  predicted: $('#predicted'), confidence: $('#confidence'), probs: $('#probs'), latency: $('#latency'), rate: $('#rate'),
  updates: $('#updates'), tokens: $('#tokens'), truth: $('#truth'), history: $('#history'), legend: $('#history-legend'), announce: $('#announce'),
});
const attention = new AttentionPanel($('#maps'), {
  controls: $('#attention-controls'),
  selectionEl: $('#selection'),
  onSelect(sel) {
    if (!sel) traces.highlights = [];
    else {
      const same = sel.query.id === sel.key.id && sel.query.time === sel.key.time;
      traces.highlights = same
        ? [{ id: sel.query.id, t0: sel.query.t0, t1: sel.query.t1, color: QUERY_COLOR, label: 'Q = K' }]
        : [{ id: sel.query.id, t0: sel.query.t0, t1: sel.query.t1, color: QUERY_COLOR, label: 'Q' },
          { id: sel.key.id, t0: sel.key.t0, t1: sel.key.t1, color: KEY_COLOR, label: 'K' }];
    }
  },
});
document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && attention.selection) attention.clearSelection(); });

// --- the source of the signals ----------------------------------------------------------------
let session = null;

function renderDevices() {
  const list = $('#devices');
  const name = $('#source-name');
  name.textContent = session?.label ?? '–';
  name.dataset.seed = session?.sim ? String(session.sim.seed) : '';
  name.title = session?.sim ? `simulator seed ${session.sim.seed}: ?seed=${session.sim.seed} replays these signals` : '';
  const items = [...(session?.devices.values() ?? [])].map((d) => {
    const id = d.wearable?.device?.id;
    return h('li', { class: 'device', dataset: { state: d.state, kind: d.kind, ...(id ? { id } : {}) }, title: id ? `Bluetooth device id ${id}` : undefined },
      h('span', { class: 'led' }), h('span', { class: 'name' }, d.name),
      h('span', { class: 'state' }, { streaming: 'streaming', connecting: 'connecting…', reconnecting: 'reconnecting…', lost: 'lost', closed: 'closed' }[d.state] ?? d.state),
      d.battery !== null && d.battery !== undefined ? h('span', { class: 'battery', title: 'battery' }, `${d.battery} %`) : null);
  });
  list.replaceChildren(...items);
  const bt = session?.source === 'bluetooth';
  $('#add-thermometer').hidden = !bt || session.devices.has('thermometer');
  $('#add-oximeter').hidden = !bt || session.devices.has('oximeter');
  $('#use-simulator').hidden = !bt;
  $('#connect').hidden = bt;
  const strap = session?.devices.get('strap');
  $('#disconnect').disabled = !(session?.canSimulateDisconnect && strap?.state === 'streaming');
  $('#live-tag').dataset.state = [...(session?.devices.values() ?? [])].some((d) => d.state === 'streaming') ? 'on' : 'off';
}

function adopt(next) {
  next.addEventListener('log', (e) => addLog(e.detail));
  next.addEventListener('change', () => { if (next === session) renderDevices(); });
  return next;
}

async function switchTo(next) {
  const previous = session;
  session = next;
  traces.setSession(next);
  traces.window = null;
  attention.clear();
  renderDevices();
  $('#history-note').textContent = next.sim ? 'last 2 min · top: simulator · bottom: model' : 'last 2 min · the model’s class';
  if (previous && previous !== next) await previous.close();
}

async function startSimulator() {
  const next = adopt(Session.simulated({ dropoutProbability: DROPOUT, seed: SEED, schedule: SCHEDULE }));
  addLog({ kind: 'source', text: `simulated wearable (seed ${SEED}): Polar H10-like strap (ECG, ACC, HR/RR), thermometer, oximeter`, time: next.started });
  await switchTo(next);
  const results = await next.connectAll();
  for (const r of results) if (r.status === 'rejected') addLog({ kind: 'error', text: r.reason?.message ?? String(r.reason), time: Date.now() / 1000 });
}

// Web Bluetooth: requestDevice must run in the click (or, with ?source=bluetooth, whatever
// navigator.bluetooth a test injected). The running source is replaced only once a device is in.
async function startBluetooth(kinds = ['strap']) {
  const next = adopt(Session.bluetooth(navigator.bluetooth));
  const first = next.connect(kinds[0]);  // no await before this: the click's activation is needed
  try {
    await first;
  } catch (error) {
    await next.close();
    showNotice(`${error.message}`, error.code === 'BLUETOOTH_NO_DEVICE' ? 'info' : 'warn');
    return false;
  }
  addLog({ kind: 'source', text: 'Web Bluetooth: streaming from your wearable', time: Date.now() / 1000 });
  await switchTo(next);
  for (const kind of kinds.slice(1)) {
    await next.connect(kind).catch((error) => addLog({ kind: 'info', text: `${kind}: ${error.message}`, time: Date.now() / 1000 }));
  }
  return true;
}

const availability = bluetoothAvailability();
if (!availability.available) {
  $('#connect').classList.add('unavailable');
  $('#connect').title = availability.message;
}

$('#connect').addEventListener('click', () => {
  const a = bluetoothAvailability();
  if (!a.available) {
    showNotice(a.message, 'warn');
    return;
  }
  notice.hidden = true;
  startBluetooth(['strap']);
});
for (const kind of ['thermometer', 'oximeter']) {
  $(`#add-${kind}`).addEventListener('click', () => {
    if (session?.source !== 'bluetooth') return;
    session.connect(kind).catch((error) => showNotice(`${kind}: ${error.message}`, error.code === 'BLUETOOTH_NO_DEVICE' ? 'info' : 'warn'));
  });
}
$('#use-simulator').addEventListener('click', () => startSimulator());
$('#disconnect').addEventListener('click', () => {
  if (session?.simulateDisconnect(OUTAGE_SECONDS)) renderDevices();
});

// --- the model --------------------------------------------------------------------------------
const loop = new InferenceLoop({ modelUrl: MODEL_URL, getSession: () => session });
loop.addEventListener('result', (e) => {
  const d = e.detail;
  const truth = d.session.sim ? d.session.sim.truth.activityAt(d.end) : null;
  prediction.update(d, truth);
  attention.update(d);
  traces.window = { t0: d.end - d.seconds, t1: d.end };
});
loop.addEventListener('error', (e) => {
  const { error, phase } = e.detail;
  if (phase === 'load') {
    $('#predicted').textContent = 'no model';
    $('#maps').replaceChildren(h('p', { class: 'placeholder' }, `No attention maps without a model (${error.code ?? 'error'}).`));
    $('#model-info').textContent = `The model did not load from ${MODEL_URL}: ${error.message}`;
    showNotice(`The model did not load (${error.code ?? 'error'}): ${error.message}. The signals still stream; train the demo model (tools/demo/train_demo_model.py) or pass ?model=URL.`, 'warn');
  }
  addLog({ kind: 'error', text: `${phase}: ${error.message}`, time: Date.now() / 1000 });
});
loop.addEventListener('loaded', (e) => {
  const c = e.detail.config;
  // Without labels the model's head is not a classifier (forward gives no probabilities or label).
  const labels = c.labels ?? [];
  prediction.setLabels(labels);
  attention.setConfig(c);
  attention.redraw();
  const file = new URL(MODEL_URL, location.href).pathname.split('/').pop();
  $('#model-info').replaceChildren(
    h('b', {}, file), ` · ${c.layout} attention · ${c.n_layers} layers × ${c.n_heads} heads · d ${c.d_model} · `,
    `${c.modalities.length} modalities · ${c.time_bin} s time bins · runs in a Web Worker`);
  addLog({ kind: 'model', text: `model loaded: ${file} (${c.layout}, ${c.n_layers} layers, ${c.n_heads} heads, ${labels.length ? `classes ${labels.join(' / ')}` : 'no class labels'})`, time: Date.now() / 1000 });
});

const pause = $('#pause');
// "1" while a window is in the Worker: once paused and "0", no further result will land.
loop.addEventListener('state', () => { pause.dataset.inflight = loop.inFlight ? '1' : '0'; });
pause.addEventListener('click', () => {
  loop.paused = !loop.paused;
  pause.textContent = loop.paused ? 'Resume' : 'Pause';
  pause.setAttribute('aria-pressed', String(loop.paused));
  document.body.classList.toggle('paused', loop.paused);
});

// --- go ---------------------------------------------------------------------------------------
traces.start();
if (params.get('source') === 'bluetooth' && bluetoothAvailability().available) {
  startBluetooth(['strap', 'thermometer', 'oximeter']).then((ok) => ok || startSimulator());
} else {
  if (params.get('source') === 'bluetooth') showNotice(bluetoothAvailability().message, 'warn');
  startSimulator();
}
if (await loop.load()) loop.start();
