export { SensorformerError } from './errors.js';
export { loadModel, Model } from './model.js';
export { loadModelInWorker, WorkerModel } from './worker-client.js';
export { loadCore } from './core.js';
export { hasWasmSimd } from './loader.js';
