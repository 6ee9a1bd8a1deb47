// Ensembles: several models in one weights file, run side by side on the same input, their class
// probabilities averaged (docs/model.md "Ensembles"). The file is a safetensors file whose
// metadata has "ensemble": {"combine": "mean_probability", "members": [{"prefix", "metadata"}]}:
// member k's tensors are named <prefix><name>, and its own metadata (its "config") is kept as it
// was. Each member is cut out into a safetensors file of its own here and loaded by the core as
// any model; model.js runs them and this file combines their heads.
//
// Streams go to the members whose modalities include theirs (a member never sees a stream of a
// modality it does not know: the AF model's first member takes ECG and RR, the second and third
// ECG, RR and a beat stream each); a stream no member knows goes to the first, whose error names it.
import { SensorformerError } from './errors.js';

const bad = (message) => new SensorformerError('BAD_FORMAT', message);
export const COMBINE = 'mean_probability';

// The core's bound on a header (src/io/safetensors.cpp): a longer one is refused before parsing.
const MAX_HEADER_BYTES = 16 << 20;

// The header of a safetensors file: { header (the parsed JSON), dataStart }; null when the bytes
// are too short, the header too long or not JSON (the core then says what is wrong with the file).
function header(bytes) {
  if (bytes.byteLength < 8) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Number(view.getBigUint64(0, true));
  if (!(n > 0 && n <= MAX_HEADER_BYTES && 8 + n <= bytes.byteLength)) return null;
  try {
    return { header: JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n))), dataStart: 8 + n };
  } catch {
    return null;
  }
}

/**
 * The members of an ensemble file as safetensors files of their own (Uint8Array each, in member
 * order), or null when the bytes are not an ensemble (a single model, or not a safetensors file
 * at all: the core's loader reports that). A malformed ensemble is BAD_FORMAT naming what is wrong.
 */
export function ensembleMembers(bytes) {
  const parsed = header(bytes);
  const meta = parsed?.header?.__metadata__;
  if (!meta || typeof meta.ensemble !== 'string') return null;
  let spec;
  try {
    spec = JSON.parse(meta.ensemble);
  } catch {
    throw bad('the ensemble metadata is not JSON');
  }
  if (spec?.combine !== COMBINE) throw bad(`the ensemble's combine must be "${COMBINE}", got ${JSON.stringify(spec?.combine)}`);
  const members = spec.members;
  if (!Array.isArray(members) || members.length < 2 || members.length > 16)
    throw bad('an ensemble needs 2-16 members ("members": [{"prefix", "metadata"}])');
  const prefixes = members.map((m, k) => {
    if (typeof m?.prefix !== 'string' || !m.prefix) throw bad(`ensemble member ${k} needs a prefix`);
    if (!m.metadata || typeof m.metadata !== 'object' || Object.values(m.metadata).some((v) => typeof v !== 'string'))
      throw bad(`ensemble member ${k}'s metadata must be an object of strings`);
    return m.prefix;
  });
  const entries = Object.entries(parsed.header).filter(([name]) => name !== '__metadata__');
  const owner = (name) => {
    const k = prefixes.findIndex((p) => name.startsWith(p));
    if (k < 0) throw bad(`tensor "${name}" belongs to no ensemble member (prefixes ${prefixes.map((p) => JSON.stringify(p)).join(', ')})`);
    if (prefixes.some((p, j) => j !== k && name.startsWith(p))) throw bad(`tensor "${name}" matches two members' prefixes`);
    return k;
  };
  const data = bytes.subarray(parsed.dataStart);
  // Each byte of the data belongs to one tensor at most (safetensors' layout): a header whose
  // tensors overlap (2,000 entries naming the same megabyte) would make the members' files many
  // times the size of the source before the core could refuse them.
  const spans = [];
  for (const [name, t] of entries) {
    owner(name);  // a tensor of no member (or of two) is that error first
    const [begin, end] = Array.isArray(t?.data_offsets) ? t.data_offsets : [];
    if (Number.isSafeInteger(begin) && Number.isSafeInteger(end) && end > begin) spans.push([begin, end, name]);
  }
  spans.sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < spans.length; i++)
    if (spans[i][0] < spans[i - 1][1]) throw bad(`tensors "${spans[i - 1][2]}" and "${spans[i][2]}" overlap in the file (data_offsets)`);
  return members.map((m, k) => {
    const own = entries.filter(([name]) => owner(name) === k);
    if (!own.length) throw bad(`ensemble member ${k} (prefix "${m.prefix}") has no tensors`);
    // Contiguous from 0 in the file's order; the core checks shapes, dtypes and sizes.
    const out = { __metadata__: m.metadata };
    let offset = 0;
    const parts = [];
    for (const [name, t] of own) {
      const [begin, end] = Array.isArray(t?.data_offsets) ? t.data_offsets : [];
      if (!(Number.isSafeInteger(begin) && Number.isSafeInteger(end) && begin >= 0 && end >= begin && end <= data.byteLength))
        throw bad(`tensor "${name}" has data_offsets outside the file`);
      parts.push(data.subarray(begin, end));
      out[name.slice(m.prefix.length)] = { ...t, data_offsets: [offset, offset + end - begin] };
      offset += end - begin;
    }
    let text = new TextEncoder().encode(JSON.stringify(out));
    const padded = new Uint8Array(text.length + ((8 - ((8 + text.length) % 8)) % 8)).fill(0x20);
    padded.set(text);
    text = padded;
    const file = new Uint8Array(8 + text.length + offset);
    new DataView(file.buffer).setBigUint64(0, BigInt(text.length), true);
    file.set(text, 8);
    let at = 8 + text.length;
    for (const p of parts) file.set(p, at), (at += p.length);
    return file;
  });
}

/**
 * The ensemble's head from its members' heads: log of the mean of their softmax probabilities
 * (float64, then float32), so that softmax(head) is the mean probability and its arg-max the
 * ensemble's label (tools/af/afmodel.py mean_probability is the same rule). `present[k]`: member k
 * saw a present token; members that saw none are left out (their head is only the bias), unless
 * none did (then all are averaged, and the prediction is null anyway).
 */
export function combineHeads(heads, present) {
  const use = heads.map((_, k) => present[k]);
  if (!use.some(Boolean)) use.fill(true);
  const n = heads[0].length;
  // In log space: each member's log-softmax, then per class the log of the mean of their
  // exponentials (a log-sum-exp from its largest term). Probabilities themselves underflow to 0
  // once a member's logits are ~745 apart, and log(0) would put -Infinity in a finite model's head.
  const logs = [];
  heads.forEach((head, k) => {
    if (!use[k]) return;
    let max = -Infinity;
    for (const v of head) max = Math.max(max, v);
    let sum = 0;
    for (const v of head) sum += Math.exp(v - max);
    const shift = max + Math.log(sum);
    logs.push(Float64Array.from(head, (v) => v - shift));
  });
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let top = -Infinity;
    for (const l of logs) top = Math.max(top, l[i]);
    let sum = 0;
    for (const l of logs) sum += Math.exp(l[i] - top);
    out[i] = top + Math.log(sum / logs.length);
  }
  return out;
}

/**
 * Which member takes each stream: per member, the indices (in the caller's order) of the streams
 * whose modality it knows. A stream of a modality no member knows, or without one, goes to
 * member 0 (its error names it).
 */
export function routeStreams(modalities, memberModalities) {
  const routes = memberModalities.map(() => []);
  modalities.forEach((modality, i) => {
    let any = false;
    memberModalities.forEach((known, k) => {
      if (modality != null && known.has(modality)) routes[k].push(i), (any = true);
    });
    if (!any) routes[0].push(i);
  });
  return routes;
}

/** A core message's "stream j: " of a member's numbering in the caller's numbering. */
export function renumber(message, route) {
  return message.replace(/^stream (\d+): /, (all, j) => (route[Number(j)] === undefined ? all : `stream ${route[Number(j)]}: `));
}
