// The demo page: a wearable (simulated by default, or real over Web Bluetooth) -> the package's
// device layer -> a model in a Web Worker -> prediction, attention and live traces. Two modes:
// - stream (the default when the stream model loads): the device layer's samples become chunks of
//   a streaming session as notifications arrive; each push that makes a patch final updates the
//   prediction (session.pooled over the last 10 s) and the newest token's look-back attention;
// - window: the last 10 s through the windowed model's forward once a second, with the maps.
// In stream mode a second session, the AF model's, shows the heart rhythm (ui/rhythm.js).
//
// Query parameters:
//   mode=stream|window the mode to start in (default: stream when the stream model loads, else window)
//   model=URL          the windowed model's weights (default model/demo.safetensors, relative to this page)
//   streamModel=URL    the stream model's weights (default model/stream.safetensors): causal, with
//                      attention_lookback_s
//   afModel=URL        the AF model's weights (default models/af.safetensors: the package's copy,
//                      which tools/serve-demo.mjs serves from the repository's models/): the stream
//                      mode's Rhythm card, a second session fed from the strap's ECG and RR
//   record=1           keep every chunk pushed and every streamed prediction in the page (for the
//                      tests: globalThis.sensorformerDemo.recording()); memory grows with the visit
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
import { readPolarLogger } from '../web/src/polar-logger.js';
import { AttentionPanel } from './ui/attention-panel.js';
import { $, clockTime, h, hostNow, relTime } from './ui/dom.js';
import { InferenceLoop } from './ui/inference.js';
import { LookbackStrip, renderKeyList } from './ui/lookback-strip.js';
import { PredictionPanel } from './ui/prediction.js';
import { AF_EPISODE_SECONDS, AF_FEED, RHYTHM_SECONDS, RhythmPanel } from './ui/rhythm.js';
import { Session } from './ui/source.js';
import { StreamInference } from './ui/stream-inference.js';
import { onSchemeChange } from './ui/theme.js';
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
const STREAM_MODEL_URL = params.get('streamModel') || 'model/stream.safetensors';
const AF_MODEL_URL = params.get('afModel') || 'models/af.safetensors';
let MODE = params.get('mode');
if (MODE !== null && MODE !== 'stream' && MODE !== 'window') {
  badParams.push(`mode=${MODE} (stream or window)`);
  MODE = null;
}
let RECORD = params.get('record');
if (RECORD !== null && RECORD !== '1' && RECORD !== '0') {
  badParams.push(`record=${RECORD} (1 or 0)`);
  RECORD = null;
}
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
  predicted: $('#predicted'), confidence: $('#confidence'), probs: $('#probs'), latency: $('#latency'), cost: $('#cost'), rate: $('#rate'),
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
        ? [{ id: sel.query.id, t0: sel.query.t0, t1: sel.query.t1, role: 'query', label: 'Q = K' }]
        : [{ id: sel.query.id, t0: sel.query.t0, t1: sel.query.t1, role: 'query', label: 'Q' },
          { id: sel.key.id, t0: sel.key.t0, t1: sel.key.t1, role: 'key', label: 'K' }];
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
  $('#use-simulator').hidden = session?.source === 'simulated' || !session;
  const strap = session?.devices.get('strap');
  // With a wearable in, Connect gives way to the device controls; it is back once the strap is
  // lost (its reconnects given up) or gone, to connect it again (the click handler below).
  $('#connect').hidden = bt && !!strap && strap.state !== 'lost';
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
  traces.highlights = [];
  attention.clear();
  // The old source's predictions are not the new one's: the card, its strip and the look-back
  // start afresh (until the new source's first result).
  prediction.reset();
  prediction.clearLatest();
  lookback.update(null);
  shownLookback = null;
  if (mode === 'stream') renderKeyList($('#stream-keys'), null);
  renderDevices();
  // A stream session is fed by one source from its start: a new source, a new session.
  if (mode === 'stream') {
    streamer.start(next);
    startRhythm(next);
  }
  showTruth();
  $('#history-note').textContent = next.sim ? 'last 2 min · top: simulator · bottom: model' : 'last 2 min · the model’s class';
  // The old source's devices are let go last; a failure there must not keep the new one from
  // starting (its caller connects or plays it next).
  if (previous && previous !== next) {
    try {
      await previous.close();
    } catch (error) {
      addLog({ kind: 'error', text: `closing ${previous.label}: ${error?.message ?? error}`, time: hostNow() });
    }
  }
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
// One connect at a time: a second click while the chooser is open or the strap is connecting
// would start a second connection (and a second source) beside the first. `connect()` runs it
// (in the click, with nothing awaited before its chooser) unless one is under way.
let connecting = false;
async function oneConnect(connect) {
  if (connecting) return false;
  connecting = true;
  $('#connect').disabled = true;
  try {
    return await connect();
  } finally {
    connecting = false;
    $('#connect').disabled = false;
  }
}

function startBluetooth(kinds = ['strap']) {
  return oneConnect(async () => {
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
  });
}

// The strap of the running Bluetooth source again (Connect is shown for one once it is lost): into
// the same session, so the other devices and the stream sessions go on, with a gap.
function reconnectStrap(current) {
  return oneConnect(() => current.connect('strap').then(() => true, (error) => {
    showNotice(`${error.message}`, error.code === 'BLUETOOTH_NO_DEVICE' ? 'info' : 'warn');
    return false;
  }));
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
  if (session?.source === 'bluetooth') reconnectStrap(session);
  else startBluetooth(['strap']);
});
for (const kind of ['thermometer', 'oximeter']) {
  $(`#add-${kind}`).addEventListener('click', () => {
    if (session?.source !== 'bluetooth') return;
    session.connect(kind).catch((error) => showNotice(`${kind}: ${error.message}`, error.code === 'BLUETOOTH_NO_DEVICE' ? 'info' : 'warn'));
  });
}
$('#use-simulator').addEventListener('click', () => startSimulator());
// A recording from disk: a Polar Sensor Logger export (its .txt files, one per stream), read by the
// package's reader and played at its real pace through the same takers as a live device.
$('#open-export').addEventListener('click', () => $('#export-files').click());
$('#export-files').addEventListener('change', async (e) => {
  const files = Array.from(e.target.files ?? []);
  e.target.value = '';  // the same files again later are a new choice
  if (!files.length) return;
  let result;
  try {
    result = await readPolarLogger(files);
  } catch (error) {
    showNotice(`Could not read the recording: ${error.message}`, 'warn');
    return;
  }
  notice.hidden = true;
  const kinds = Object.values(result.report).map((r) => r.kind);
  const next = adopt(Session.recording(result, `Recording: ${kinds.join(', ')}`));
  addLog({ kind: 'source', text: `Polar Sensor Logger export (${files.length} files: ${kinds.join(', ')}), played from now at its real pace`, time: hostNow() });
  await switchTo(next);
  next.play();
});
$('#disconnect').addEventListener('click', () => {
  if (session?.simulateDisconnect(OUTAGE_SECONDS)) renderDevices();
});
$('#start-af').addEventListener('click', () => {
  const sim = session?.sim;
  if (!sim) return;
  try {
    const e = sim.startAf({ duration: AF_EPISODE_SECONDS });
    addLog({ kind: 'simulate', text: `atrial fibrillation for ${AF_EPISODE_SECONDS} s from ${clockTime(e.start)} (simulated)`, time: hostNow() });
  } catch (error) {
    // An episode already running or scheduled (they cannot overlap): the button is disabled then.
    addLog({ kind: 'info', text: `no AF episode started: ${error.message}`, time: hostNow() });
  }
  showTruth();
});

// --- the models -------------------------------------------------------------------------------
const loop = new InferenceLoop({ modelUrl: MODEL_URL, getSession: () => session });
const streamer = new StreamInference({ modelUrl: STREAM_MODEL_URL, record: RECORD === '1' });
// The AF model: the strap's ECG (mV) and RR only, pooled over 30 s, no attention rows (nothing draws them).
const rhythm = new StreamInference({ modelUrl: AF_MODEL_URL, seconds: RHYTHM_SECONDS, attention: false, record: RECORD === '1', ...AF_FEED });
if (RECORD === '1') {
  globalThis.sensorformerDemo = {
    recording: () => streamer.recording, stats: () => streamer.stats, feed: () => streamer.feed,
    rhythm: () => rhythm.recording, sim: () => session?.sim ?? null, session: () => session,
  };
}
const lookback = new LookbackStrip($('#lookback'), $('#lookback-caption'));
let mode = null;           // 'stream' | 'window' once chosen
let modeChange = 0;        // the latest setMode call: an earlier one that is still loading gives way
const windowState = { loading: null, failed: null };
const streamState = { failed: null };
const rhythmState = { loading: null, failed: null, said: false };

function modelInfo(url, c, how) {
  const file = new URL(url, location.href).pathname.split('/').pop();
  const extra = c.attention_lookback_s ? ` · causal, look-back ${c.attention_lookback_s} s` : '';
  $('#model-info').replaceChildren(
    h('b', {}, file), ` · ${c.layout} attention${extra} · ${c.n_layers} layers × ${c.n_heads} heads · d ${c.d_model} · `,
    `${c.modalities.length} modalities · ${c.time_bin} s time bins · ${how}`);
  return file;
}

// threads: what the Worker's module runs a forward on (more than 1 on this cross-origin-isolated
// page, served with COOP and COEP by tools/serve-demo.mjs; 1 where a server does not send them).
function logLoaded(url, { config: c, threads }, what) {
  const file = new URL(url, location.href).pathname.split('/').pop();
  const labels = c.labels ?? [];
  addLog({ kind: 'model', text: `${what} loaded: ${file} (${c.layout}, ${c.n_layers} layers, ${c.n_heads} heads${c.attention_lookback_s ? `, causal, look-back ${c.attention_lookback_s} s` : ''}, ${labels.length ? `classes ${labels.join(' / ')}` : 'no class labels'}; ${threads} thread${threads === 1 ? '' : 's'})`, time: Date.now() / 1000 });
}


loop.addEventListener('result', (e) => {
  if (mode !== 'window') return;  // a window that was in the Worker when the mode changed
  const d = e.detail;
  const truth = d.session.sim ? d.session.sim.truth.activityAt(d.end) : null;
  prediction.update(d, truth);
  attention.update(d);
  traces.window = { t0: d.end - d.seconds, t1: d.end };
});
loop.addEventListener('error', (e) => {
  const { error, phase } = e.detail;
  if (phase === 'load') windowState.failed = error;  // setMode says it
  addLog({ kind: 'error', text: `${phase}: ${error.message}`, time: Date.now() / 1000 });
});
loop.addEventListener('loaded', (e) => logLoaded(MODEL_URL, e.detail, 'windowed model'));
streamer.addEventListener('loaded', (e) => logLoaded(STREAM_MODEL_URL, e.detail, 'stream model'));
streamer.addEventListener('log', (e) => addLog({ ...e.detail, time: Date.now() / 1000 }));
streamer.addEventListener('error', (e) => {
  const { error, phase } = e.detail;
  if (phase === 'load') {
    streamState.failed = error;  // setMode says it
    return;
  }
  addLog({ kind: 'error', text: `stream session: ${error.code ?? 'error'}: ${error.message}`, time: Date.now() / 1000 });
  showNotice(`The stream session stopped (${error.code ?? 'error'}): ${error.message}.${e.detail.restarting ? ' A new one starts in a moment.' : ''}`, 'warn');
});

// --- the rhythm (the AF model's session) --------------------------------------------------------
const rhythmPanel = new RhythmPanel({
  label: $('#rhythm-label'), probs: $('#rhythm-probs'), status: $('#rhythm-status'), announce: $('#rhythm-announce'),
  truth: $('#rhythm-truth'), control: $('#start-af'),
});
rhythm.addEventListener('loaded', (e) => {
  logLoaded(AF_MODEL_URL, e.detail, 'AF model');
  rhythmPanel.setLabels(e.detail.config.labels ?? []);
});
rhythm.addEventListener('log', (e) => addLog({ ...e.detail, text: `AF model: ${e.detail.text}`, time: hostNow() }));
rhythm.addEventListener('error', (e) => {
  const { error, phase } = e.detail;
  if (phase === 'load') {
    rhythmState.failed = error;  // startRhythm says it
    return;
  }
  addLog({ kind: 'error', text: `AF model session: ${error.code ?? 'error'}: ${error.message}`, time: hostNow() });
  rhythmPanel.unavailable(`The AF model's session stopped (${error.code ?? 'error'}: ${error.message}).${e.detail.restarting ? ' A new one starts in a moment.' : ''}`);
});
rhythm.addEventListener('result', (e) => {
  if (mode === 'stream') rhythmPanel.update(e.detail);
});

/** Feeds a new AF session from `source` (the stream mode's), loading the model the first time. */
async function startRhythm(source) {
  if (!rhythm.loaded) {
    rhythmState.loading ??= rhythm.load();
    if (!(await rhythmState.loading)) {
      const error = rhythmState.failed;
      const why = `${error?.code ?? 'error'}: ${error?.message}`;
      rhythmPanel.unavailable(`The AF model did not load from ${AF_MODEL_URL} (${why}); the rest of the page runs without it (pass ?afModel=URL).`);
      if (!rhythmState.said) addLog({ kind: 'error', text: `no AF model from ${AF_MODEL_URL} (${why}): no rhythm`, time: hostNow() });
      rhythmState.said = true;
      return;
    }
  }
  if (mode !== 'stream' || source !== session) return;  // left stream mode, or a newer source, meanwhile
  rhythmPanel.waiting();
  await rhythm.start(source);
}

// The simulator's rhythm, twice a second (the episode's countdown), and after the control's click.
function showTruth() {
  rhythmPanel.showTruth(session?.sim?.truth ?? null, hostNow());
}
setInterval(showTruth, 500);

const sessionLine = $('#session-line');
let shownLookback = null;
streamer.addEventListener('result', (e) => {
  if (mode !== 'stream') return;
  const d = e.detail;
  const p = d.prediction;
  const truth = d.source.sim ? d.source.sim.truth.activityAt(p.to) : null;
  prediction.show({
    probabilities: p.probabilities ?? null, label: p.label ?? null, end: p.to, truth,
    tokens: { text: String(d.finalTokens), title: `${d.finalTokens} final tokens in this session (${d.absentTokens} absent: missing data); ${p.presentTokens} present ones pooled over the last ${streamer.seconds} s` },
    stats: d.stats,
  });
  lookback.update(d.lookback);
  if (d.lookback !== shownLookback) {
    shownLookback = d.lookback;
    renderKeyList($('#stream-keys'), d.lookback);
  }
  traces.window = { t0: p.from, t1: p.to };
  const q = d.lookback?.query;
  traces.highlights = q ? [{ id: q.id, t0: q.time, t1: q.t1, role: 'query', label: 'Q' }] : [];
  // The feeder's counts (web/src/ble/feeder.js stats): received from the device layer, values
  // given to the session, held for a late neighbour, slots marked missing (NaN, a gap, `until`).
  let received = 0, given = 0, pending = 0, missing = 0;
  for (const s of Object.values(d.feed)) {
    received += s.received; given += s.given; pending += s.pending; missing += s.missing;
  }
  Object.assign(sessionLine.dataset, {
    final: String(d.finalTokens), absent: String(d.absentTokens), received: String(received), given: String(given),
    pending: String(pending), missing: String(missing), frontier: d.frontier.toFixed(3), memory: String(d.memoryBytes),
  });
  sessionLine.textContent = `session: ${d.finalTokens} final tokens (${d.absentTokens} absent) · frontier ${relTime(d.frontier - hostNow())} · ${(d.memoryBytes / 1024).toFixed(0)} KiB in the Worker · samples: ${received} received, ${given} pushed, ${pending} waiting, ${missing} marked missing`;
});

const STAT_TITLES = {
  window: {
    latency: 'median of the last 21 forward passes with attention maps, main thread → Worker → main thread',
    rate: 'model windows per second over the last 10 s', updates: 'windows run through the model since the page opened', updatesName: 'windows',
    tokens: 'tokens in the latest window (patches of every stream)',
  },
  stream: {
    latency: 'notification to updated prediction: median of the last 50, from a notification reaching the device layer to the prediction it made written on this page (chunk, push and pooled() in the Worker, the panels)',
    rate: 'predictions per second over the last 10 s (one per push that made a patch final)', updates: 'predictions since the stream session started', updatesName: 'predictions',
    tokens: 'final tokens of the stream session',
  },
};

function showMode(next) {
  document.body.dataset.mode = next;
  $('#mode').dataset.mode = next;
  $(`#mode-${next}`).checked = true;
  const stream = next === 'stream';
  $('#lookback-row').hidden = !stream;
  $('#rhythm-card').hidden = !stream;
  $('#stream-note').hidden = !stream;
  $('#stream-keys').hidden = !stream;
  if (stream) renderKeyList($('#stream-keys'), null);
  $('#maps').hidden = stream;
  $('#attention-controls').hidden = stream;
  $('#selection').hidden = stream;
  $('#cost-stat').hidden = !stream;
  const t = STAT_TITLES[next];
  $('#latency-stat').title = t.latency;
  $('#rate-stat').title = t.rate;
  $('#updates-stat').title = t.updates;
  $('#updates-name').textContent = t.updatesName;
  $('#tokens-stat').title = t.tokens;
  $('#window-legend').textContent = stream ? 'pooled by the prediction (10 s)' : 'model window (10 s)';
  for (const id of ['#latency', '#cost', '#rate', '#tokens']) { $(id).textContent = '–'; if ($(id).dataset.ms !== undefined) $(id).dataset.ms = ''; }
  $('#updates').textContent = '0';
  $('#updates').dataset.count = '0';
  prediction.reset();
  traces.window = null;
  traces.highlights = [];
}

/** Switches the page to `next` ('stream' | 'window'), loading its model the first time. */
async function setMode(next, { fallback = false } = {}) {
  if (next === mode) return true;
  const call = ++modeChange;
  mode = next;
  showMode(next);
  if (next === 'stream') {
    loop.stop();
    attention.clearSelection();
    if (!streamer.loaded) {
      $('#model-info').textContent = 'loading the stream model…';
      if (!(await streamer.load())) {
        if (call !== modeChange) return false;
        $('#mode-stream').disabled = true;
        const error = streamState.failed;
        const why = `${error?.code ?? 'error'}: ${error?.message}`;
        $('#mode-stream').closest('label').title = `the stream model did not load from ${STREAM_MODEL_URL} (${why})`;
        addLog({ kind: fallback ? 'model' : 'error', text: `no stream model from ${STREAM_MODEL_URL} (${why}): the windowed model runs (train one with tools/demo/train_stream_model.py, or pass ?streamModel=URL)`, time: Date.now() / 1000 });
        if (!fallback) showNotice(`The stream model did not load from ${STREAM_MODEL_URL} (${why}): the windowed model runs instead.`, 'warn');
        // Back to the windowed model whichever mode was shown before (none at the start, or
        // window): setMode returns at once for the mode it is in, and the window loop and layout
        // were given up above, so they are set up again from no mode.
        mode = null;
        return setMode('window');
      }
      if (call !== modeChange) return false;
    }
    const c = streamer.config;
    prediction.setLabels(c.labels ?? []);
    modelInfo(STREAM_MODEL_URL, c, 'a streaming session in a Web Worker, fed as notifications arrive');
    await streamer.start(session);
    startRhythm(session);
    return true;
  }
  await Promise.all([streamer.stop(), rhythm.stop()]);
  if (call !== modeChange) return false;
  if (!loop.config) {
    $('#model-info').textContent = 'loading the windowed model…';
    windowState.loading ??= loop.load();
    const config = await windowState.loading;
    windowState.loading = null;
    if (call !== modeChange) return false;
    if (!config) {
      const error = windowState.failed ?? {};
      $('#predicted').textContent = 'no model';
      $('#maps').replaceChildren(h('p', { class: 'placeholder' }, `No attention maps without a model (${error.code ?? 'error'}).`));
      $('#model-info').textContent = `The model did not load from ${MODEL_URL}: ${error.message}`;
      showNotice(`The model did not load (${error.code ?? 'error'}): ${error.message}. The signals still stream; train the demo model (tools/demo/train_demo_model.py) or pass ?model=URL.`, 'warn');
      return false;
    }
  }
  const c = loop.config;
  prediction.setLabels(c.labels ?? []);
  attention.setConfig(c);
  attention.redraw();
  modelInfo(MODEL_URL, c, 'runs in a Web Worker');
  loop.start();
  return true;
}

for (const value of ['stream', 'window']) {
  $(`#mode-${value}`).addEventListener('change', (e) => { if (e.target.checked) setMode(value); });
}

const pause = $('#pause');
// "1" while a window is in the Worker: once paused and "0", no further result will land.
loop.addEventListener('state', () => { pause.dataset.inflight = loop.inFlight ? '1' : '0'; });
pause.addEventListener('click', () => {
  loop.paused = !loop.paused;
  // Paused, the stream session is still fed (nothing is lost, no gap appears): only the page stops.
  streamer.paused = loop.paused;
  rhythm.paused = loop.paused;
  pause.textContent = loop.paused ? 'Resume' : 'Pause';
  pause.setAttribute('aria-pressed', String(loop.paused));
  document.body.classList.toggle('paused', loop.paused);
});

// --- go ---------------------------------------------------------------------------------------
traces.afterDraw = () => { if (mode === 'stream') lookback.draw(); };
// The traces and the strip redraw every frame; these only when something changes.
onSchemeChange(() => { prediction.drawHistory(); attention.redraw(); });
traces.start();
if (params.get('source') === 'bluetooth' && bluetoothAvailability().available) {
  startBluetooth(['strap', 'thermometer', 'oximeter']).then((ok) => ok || startSimulator());
} else {
  if (params.get('source') === 'bluetooth') showNotice(bluetoothAvailability().message, 'warn');
  startSimulator();
}
setMode(MODE ?? 'stream', { fallback: MODE === null });
