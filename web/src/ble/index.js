// sensorformer/ble: wearables over Web Bluetooth (docs/bluetooth.md).
export { bluetoothAvailability, connectWearable, Wearable, DEFAULT_FILTERS, DEFAULT_STREAMS, DEVICE_FILTERS, UUIDS } from './device.js';
export { WindowAssembler, StreamBuffer } from './assembler.js';
export { ClockAligner, BeatTimeline } from './clock.js';
export * as decoders from './decoders.js';
export { BluetoothDecodeError, BluetoothUnavailableError } from './errors.js';
// The clocks are here too (replay and record take one); the simulated wearable is its own entry
// point, sensorformer/simulator (web/src/simulator/index.js), so that this one does not pull it in.
export { createVirtualClock, createRealClock } from './fake-gatt.js';
export { record, replay, parseRecording, RECORDING_FORMAT } from './recording.js';
export { exportToRecording } from './export-recording.js';
export { windowsFromRecording, replayIntoSession, replayPolarLoggerIntoSession } from './session.js';
export { SessionFeeder, feedSession, FEEDER_DEFAULTS } from './feeder.js';
