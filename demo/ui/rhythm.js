// The stream mode's heart rhythm (issue 20): the AF model (models/af.safetensors, docs/models.md) as
// a second streaming session (ui/stream-inference.js) fed from the chest strap's ECG and RR, and the
// card that shows it, with the simulator's "Start AF episode" control. tools/af/simulated_accuracy.mjs
// feeds the same model the same way (AF_FEED) and labels the same windows (rhythmReady).
import { h } from './dom.js';
import { ProbabilityBars, percent } from './prediction.js';

// How the AF model takes the strap's streams: what it was trained on (tools/af/afmodel.py
// "Inputs"): one sensor (0); the ECG in mV (a Polar H10 sends µV: x 1e-3) at the strap's own rate
// (the feeder measures it; the model file reads it at 300 Hz, "upsample_hz"); RR intervals in
// seconds as an event stream, one per beat (the strap's own, from its Heart Rate Measurement
// notifications). A model's beat streams (models/af.safetensors: two, each beat's ECG on its own
// grid with the RR intervals before it) are not listed: the feeder, given the model's config,
// derives each of its beat modalities from the ECG by itself (a BeatTracker per grid; the strap
// sends no beat times). The strap's other streams (ACC, HR) are left out by the feeder: the model
// has no such modality.
export const AF_FEED = Object.freeze({
  streams: Object.freeze({
    ecg: Object.freeze({ sensor: 0, modality: 'ecg', placement: 'chest', rateHz: 130, scale: 1e-3 }),
    rr: Object.freeze({ sensor: 0, modality: 'rr', placement: 'chest', rateHz: null }),
  }),
});

// The rhythm is pooled over the last 30 s: the challenge's recordings are 9-61 s (most 30 s), and
// AF is a judgement on a stretch of beats, not on one.
export const RHYTHM_SECONDS = 30;
// How long an episode "Start AF episode" starts, seconds: long enough for a full 30 s window inside it.
export const AF_EPISODE_SECONDS = 120;

export const RHYTHM_NAMES = Object.freeze({ normal: 'normal rhythm', af: 'atrial fibrillation', other: 'other rhythm', noisy: 'too noisy' });
const truthName = (r) => (r === 'af' ? 'atrial fibrillation' : 'sinus rhythm');

/**
 * Whether a prediction pools a whole RHYTHM_SECONDS of the session: its window [from, to) starts
 * at or after the session's reference time (its first sample). Before that the window holds
 * less than 30 s of ECG and the page says it is waiting.
 */
export function rhythmReady(prediction, referenceTime) {
  return prediction.to - RHYTHM_SECONDS >= referenceTime - 1e-9;
}

const clock = (s) => `${Math.floor(s / 60)}:${String(Math.floor(s % 60)).padStart(2, '0')}`;

/**
 * The rhythm card. Elements: card (the section), label, probs (the bars' container), status (a
 * line under the label), announce (a polite live region), truth, control (the AF button).
 */
export class RhythmPanel {
  #bars = new ProbabilityBars([]);

  constructor(elements) {
    Object.assign(this, elements);
    this.labels = [];
  }

  /** The AF model's labels (its config): a bar each. */
  setLabels(labels) {
    this.labels = labels;
    this.#bars = new ProbabilityBars(labels, { rowClass: 'rprob', names: RHYTHM_NAMES });
    this.probs.replaceChildren(...this.#bars.rows);
  }

  #state(text, state, title = '') {
    this.label.textContent = text;
    this.label.title = title;
    this.label.dataset.state = state;
    delete this.label.dataset.cls;
    this.#bars.clear();
  }

  /** Before the first prediction (a new session). */
  waiting() {
    this.#state(`waiting for ${RHYTHM_SECONDS} s of ECG…`, 'waiting');
    this.status.textContent = '';
  }

  /**
   * The AF model did not load (then there are no bars: setLabels was never called), or its session
   * stopped: the reason, and the bars kept but emptied, for the new session's results to fill.
   */
  unavailable(why) {
    this.#state('not available', 'unavailable');
    this.status.textContent = why;
  }

  /** A 'result' of the AF model's StreamInference. */
  update(detail) {
    const p = detail.prediction;
    const covered = Math.max(0, p.to - detail.referenceTime);
    if (!rhythmReady(p, detail.referenceTime)) {
      this.#state(`waiting for ${RHYTHM_SECONDS} s of ECG…`, 'waiting');
      this.status.textContent = `${Math.min(covered, RHYTHM_SECONDS).toFixed(0)} s of ${RHYTHM_SECONDS} s so far`;
      return;
    }
    if (!this.labels.length) {
      this.#state('no class labels', 'none', 'The AF model\'s config has no labels: its head is not a classifier.');
      return;
    }
    if (!p.probabilities) {
      this.#state(`no ECG in the last ${RHYTHM_SECONDS} s`, 'none', 'No present token in the window (the strap was away): no rhythm from no data.');
      this.status.textContent = '';
      return;
    }
    const best = this.labels.indexOf(p.label);
    const name = RHYTHM_NAMES[p.label] ?? p.label;
    this.label.textContent = name;
    this.label.title = '';
    this.label.dataset.state = 'label';
    this.label.dataset.cls = p.label;
    this.#bars.show(p.probabilities, best);
    this.status.textContent = `${percent(p.probabilities[best])} · last ${RHYTHM_SECONDS} s of ECG and RR`;
    // Said only when the rhythm changes (as the activity's live region).
    if (this.announce.dataset.label !== p.label) {
      this.announce.dataset.label = p.label;
      this.announce.textContent = `Heart rhythm: ${name}`;
    }
  }

  /**
   * The simulator's rhythm now (null: no simulator) and its current or next AF episode, for the
   * truth line and the control: the button is disabled during an episode (episodes cannot overlap).
   */
  showTruth(truth, now) {
    this.control.hidden = !truth;
    this.truth.hidden = !truth;
    if (!truth) return;
    const rhythm = truth.rhythmAt(now);
    const episode = truth.afEpisodes(now, Infinity)[0] ?? null;
    this.truth.dataset.rhythm = rhythm;
    this.control.disabled = episode !== null;
    const parts = ['simulator: ', h('b', { dataset: { cls: rhythm === 'af' ? 'af' : 'normal' } }, truthName(rhythm))];
    if (rhythm === 'af') parts.push(` (episode ends in ${clock(episode.end - now)})`);
    else if (episode) parts.push(` (AF episode starts in ${clock(Math.max(0, episode.start - now))})`);
    this.truth.replaceChildren(...parts);
    this.control.title = episode ? 'an AF episode is running or about to start: one at a time' : `the simulated strap's heart goes into atrial fibrillation for ${AF_EPISODE_SECONDS / 60} minutes`;
  }
}
