// The prediction card: the model's class and probabilities (forward's label and probabilities), the inference
// latency and update rate, and a strip of the recent predictions (with the simulator's ground
// truth above them when the signals are simulated).
import { fitCanvas, h, hostNow } from './dom.js';
import { classColor } from './streams.js';
import { palette } from './theme.js';

const HISTORY_SECONDS = 120;

// A probability as the card shows it, in the headline and on its bar alike (one formatting, so the
// two never disagree: a rounded "100 %" above a "99.8 %" bar did).
export const percent = (p) => `${(100 * p).toFixed(1)} %`;

/**
 * A row per class: its name, a bar and its percentage (the number is text, so no class is told by
 * colour alone). rowClass: the rows' class ('prob': the activity card's, which the page's tests
 * look up); names: label -> the words shown (default the label); each row keeps the exact
 * probability in data-p (float32 from the core, as a JS number).
 */
export class ProbabilityBars {
  constructor(labels, { rowClass = 'prob', names = {} } = {}) {
    this.bars = labels.map((name, i) => {
      const fill = h('span', { class: 'fill', dataset: { cls: name } });
      const value = h('span', { class: 'p' }, '–');
      const row = h('div', { class: rowClass, dataset: { cls: name, index: String(i), p: '' } },
        h('span', { class: 'name' }, names[name] ?? name), h('span', { class: 'bar' }, fill), value);
      return { row, fill, value };
    });
  }

  get rows() {
    return this.bars.map((b) => b.row);
  }

  /** p: a probability per label; best: the index of the label shown as the prediction. */
  show(p, best) {
    this.bars.forEach((b, i) => {
      b.fill.style.setProperty('--p', p[i].toFixed(4));
      b.value.textContent = percent(p[i]);
      b.row.dataset.p = String(p[i]);
      b.row.classList.toggle('best', i === best);
    });
  }

  /** No prediction: empty bars, "–". */
  clear() {
    for (const b of this.bars) {
      b.fill.style.setProperty('--p', '0');
      b.value.textContent = '–';
      b.row.dataset.p = '';
      b.row.classList.remove('best');
    }
  }
}

export class PredictionPanel {
  #history = [];
  #frame = 0;
  #bars = new ProbabilityBars([]);
  #strip;

  constructor({ predicted, confidence, probs, latency, cost = null, rate, updates, tokens, truth, history, legend, announce = null }) {
    Object.assign(this, { predicted, confidence, probs, latency, cost, rate, updates, tokens, truth, legend, announce });
    this.labels = [];
    this.#strip = { canvas: history, fit: fitCanvas(history, () => this.drawHistory()) };
  }

  /** A new source of predictions (the other model, another source): the strip starts afresh. */
  reset() {
    this.#history = [];
    this.drawHistory();
  }

  /**
   * No latest prediction (a new source): the headline and bars show "–". Left alone without
   * labels: the page's own words then ('no model', 'no class labels') stay.
   */
  clearLatest() {
    if (!this.labels.length) return;
    this.predicted.textContent = '–';
    this.predicted.title = '';
    this.predicted.classList.add('none');
    delete this.predicted.dataset.cls;
    this.confidence.textContent = '–';
    this.truth.hidden = true;
    this.#bars.clear();
  }

  setLabels(labels) {
    this.labels = labels;
    this.#bars = new ProbabilityBars(labels);
    this.probs.replaceChildren(...this.#bars.rows);
    this.legend.replaceChildren(...labels.map((name) => h('span', { class: 'legend-item' }, h('span', { class: 'swatch', dataset: { cls: name } }), name)));
  }

  /** detail: InferenceLoop 'result' detail; truth: the simulator's activity at the window end (or null). */
  update(detail, truth) {
    const tokens = detail.result.tokens;
    const present = tokens.present.reduce((a, b) => a + b, 0);
    this.show({
      // Given by forward when the config has labels; null both when the window held no present
      // token (a head from no data), absent without labels (the head is then not a classifier).
      probabilities: detail.result.probabilities ?? null, label: detail.result.label ?? null, end: detail.end, truth,
      tokens: { text: `${tokens.time.length}`, title: `${present} present, ${tokens.time.length - present} masked (missing data)` },
      stats: detail.stats,
    });
  }

  /**
   * A prediction: { probabilities, label (null: no present token), end (its time, host s), truth
   * (the simulator's activity then, or null), tokens: { text, title }, stats }.
   */
  show({ probabilities: p, label, end, truth, tokens, stats }) {
    this.tokens.textContent = tokens.text;
    this.tokens.title = tokens.title;
    this.showStats(stats);
    if (!this.labels.length) {
      this.predicted.textContent = 'no class labels';
      this.predicted.title = 'The model\'s config has no labels: its head is not a classifier, so there is no prediction to show.';
      this.predicted.classList.add('none');
      return;
    }
    if (!p) {
      this.predicted.textContent = '–';
      this.predicted.title = 'No present token in the window: no prediction from no data.';
      this.predicted.classList.add('none');
      delete this.predicted.dataset.cls;
      this.confidence.textContent = '–';
      this.#bars.clear();
      this.#pushHistory(end, -1, truth);
      return;
    }
    const best = this.labels.indexOf(label);
    const name = label;
    this.predicted.textContent = name;
    this.predicted.title = '';
    this.predicted.classList.remove('none');
    this.predicted.dataset.cls = name;
    // Announced (a polite live region) only when the class changes: a screen reader hearing the
    // same word every second could not use the page for anything else.
    if (this.announce && this.announce.dataset.label !== name) {
      this.announce.dataset.label = name;
      this.announce.textContent = `Predicted activity: ${name}`;
    }
    this.confidence.textContent = percent(p[best]);
    this.#bars.show(p, best);
    if (truth) {
      this.truth.hidden = false;
      this.truth.replaceChildren('simulator: ', h('b', { dataset: { cls: truth } }, truth), truth === name ? ' ✓' : '');
    } else {
      this.truth.hidden = true;
    }
    this.#pushHistory(end, best, truth);
  }

  // best: the label's index, -1 for a window without a prediction (drawn as a gap).
  #pushHistory(end, best, truth) {
    this.#history.push({ t: end, best, truth });
    while (this.#history.length && this.#history[0].t < end - HISTORY_SECONDS - 5) this.#history.shift();
    // On the next frame: the stream mode predicts several times a second, and the strip is not
    // the prediction (its drawing stays out of the notification-to-prediction latency).
    if (this.#frame) return;
    this.#frame = requestAnimationFrame(() => {
      this.#frame = 0;
      this.drawHistory();
    });
  }

  showStats(stats) {
    this.latency.textContent = Number.isFinite(stats.latencyMs) ? stats.latencyMs.toFixed(1) : '–';
    this.latency.dataset.ms = Number.isFinite(stats.latencyMs) ? stats.latencyMs.toFixed(3) : '';
    // The stream mode's parts of the latency (medians each, so they need not add up exactly).
    const parts = stats.parts;
    this.latency.title = parts && Number.isFinite(parts.workerMs)
      ? `feeder ${parts.feedMs.toFixed(2)} ms · pushes and pooled() in the Worker, with the messages ${parts.workerMs.toFixed(2)} ms · this page's panels ${parts.pageMs.toFixed(2)} ms`
      : '';
    if (this.cost) {
      this.cost.textContent = Number.isFinite(stats.costMs) ? stats.costMs.toFixed(2) : '–';
      this.cost.dataset.ms = Number.isFinite(stats.costMs) ? stats.costMs.toFixed(3) : '';
    }
    this.rate.textContent = Number.isFinite(stats.rateHz) ? stats.rateHz.toFixed(2) : '–';
    this.updates.textContent = String(stats.updates);
    this.updates.dataset.count = String(stats.updates);
  }

  drawHistory() {
    const { canvas, fit } = this.#strip;
    const ctx = canvas.getContext('2d');
    const pr = fit.pixelRatio, W = canvas.width / pr, H = canvas.height / pr;
    ctx.save();
    ctx.scale(pr, pr);
    ctx.clearRect(0, 0, W, H);
    const now = hostNow();
    const x = (t) => W - ((now - t) / HISTORY_SECONDS) * W;
    const hasTruth = this.#history.some((e) => e.truth);
    const lanes = hasTruth ? [['truth', 2, H / 2 - 3], ['best', H / 2 + 1, H / 2 - 3]] : [['best', 2, H - 4]];
    ctx.fillStyle = palette().tint;
    for (const [, y, hgt] of lanes) ctx.fillRect(0, y, W, hgt);
    for (let i = 0; i < this.#history.length; i++) {
      const e = this.#history[i], next = this.#history[i + 1];
      const a = x(e.t - 1), b = next ? x(next.t - 1) : x(e.t);
      if (b < 0) continue;
      for (const [key, y, hgt] of lanes) {
        const name = key === 'truth' ? e.truth : this.labels[e.best];
        if (!name) continue;
        ctx.fillStyle = classColor(name, this.labels.indexOf(name));
        ctx.globalAlpha = key === 'truth' ? 0.55 : 0.95;
        ctx.fillRect(Math.max(0, a), y, Math.max(1, b - a), hgt);
      }
    }
    ctx.restore();
  }
}
