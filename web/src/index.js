export { SensorformerError } from './errors.js';
export { loadCore } from './core.js';
export { hasWasmSimd } from './loader.js';
