// What the page shows for each model stream (the demo model's streams: DEFAULT_STREAMS of the
// device layer), and which device feeds which streams.
import { DEFAULT_STREAMS } from '../../web/src/ble/index.js';
import { palette } from './theme.js';

export const STREAM_VIEW = [
  { id: 'ecg', title: 'ECG', short: 'ECG', unit: 'µV', color: '#ff6b81', minSpan: 900, style: 'line', tall: true, digits: 0 },
  { id: 'acc_x', title: 'ACC x', short: 'ACC x', unit: 'mG', color: '#4dabf7', minSpan: 250, style: 'line', digits: 0 },
  { id: 'acc_y', title: 'ACC y', short: 'ACC y', unit: 'mG', color: '#748ffc', minSpan: 250, style: 'line', digits: 0 },
  { id: 'acc_z', title: 'ACC z', short: 'ACC z', unit: 'mG', color: '#b197fc', minSpan: 250, style: 'line', digits: 0 },
  { id: 'hr', title: 'Heart rate', short: 'HR', unit: 'bpm', color: '#ffa94d', minSpan: 12, style: 'step', digits: 0 },
  { id: 'rr', title: 'RR interval', short: 'RR', unit: 's', color: '#ffd43b', minSpan: 0.15, style: 'step', digits: 3 },
  { id: 'temperature', title: 'Skin temp.', short: 'Temp', unit: '°C', color: '#69db7c', minSpan: 0.6, style: 'step', digits: 2, maxStep: 15 },
  { id: 'spo2', title: 'SpO₂', short: 'SpO₂', unit: '%', color: '#3bc9db', minSpan: 3, style: 'step', digits: 1, maxStep: 4 },
];
export const VIEW_BY_ID = Object.fromEntries(STREAM_VIEW.map((v) => [v.id, v]));

/** Device kind -> the model streams it feeds. */
export const DEVICE_STREAMS = {
  strap: ['ecg', 'acc_x', 'acc_y', 'acc_z', 'hr', 'rr'],
  thermometer: ['temperature'],
  oximeter: ['spo2'],
};

export const DEVICE_TITLES = { strap: 'Chest strap', thermometer: 'Thermometer', oximeter: 'Pulse oximeter' };

/** The streams option of connectWearable for one kind of device. */
export function streamsOf(kind) {
  return Object.fromEntries(DEVICE_STREAMS[kind].map((id) => [id, DEFAULT_STREAMS[id]]));
}

/** Every stream, in display (and window) order. */
export const ALL_STREAMS = Object.fromEntries(STREAM_VIEW.map((v) => [v.id, DEFAULT_STREAMS[v.id]]));

export const streamKey = (s) => `${s.sensor}:${s.modality}:${s.placement}`;

// A class's colour: the stylesheet's (--rest, --walk, --run, per colour scheme), else one of five.
export const classColor = (name, i) => palette().cls(name) || ['#51cf66', '#fcc419', '#ff6b6b', '#4dabf7', '#b197fc'][i % 5];
