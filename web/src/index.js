export { SensorformerError } from './errors.js';
export { loadModel, Model } from './model.js';
export { StreamSession } from './stream.js';
export { loadModelInWorker, WorkerModel, WorkerStreamSession } from './worker-client.js';
export { loadCore } from './core.js';
export { hasWasmSimd, threadsUnavailableReason } from './loader.js';
export { BEAT_POINTS, BeatTracker, beatModalities, beatsFromEcg, detectBeats, rrFromEcg } from './qrs.js';
export { readWfdb } from './wfdb.js';
export { readPolarLogger } from './polar-logger.js';
