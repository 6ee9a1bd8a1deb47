// Every failure the package reports is a SensorformerError with a stable `code`:
//   from the core and the JS input checks (window.js, core.js, csv.js): INVALID_ARGUMENT,
//                    SHAPE_MISMATCH, INDEX_OUT_OF_RANGE, NON_FINITE, BAD_FORMAT,
//                    UNSUPPORTED_DTYPE, MISSING_TENSOR, IO, RESOURCE_EXHAUSTED
//   from the loader: WASM_FETCH_FAILED, WASM_NOT_WASM, WASM_NO_SIMD, WASM_INSTANTIATE_FAILED
//   from the JS API: DISPOSED (a model used after dispose()), WORKER_FAILED (the worker died)
//   from sensorformer/ble (ble/errors.js, ble/device.js): BLUETOOTH_UNAVAILABLE, BLUETOOTH_NO_DEVICE,
//                    BLUETOOTH_FAILED, BLUETOOTH_PMD, BLUETOOTH_DISCONNECTED, DECODE_ERROR
// The list users see: SensorformerErrorCode in web/index.d.ts and the README's error table
// (tests/js/types.test.js keeps both complete).
export class SensorformerError extends Error {
  constructor(code, message, options) {
    super(message, options);
    this.name = 'SensorformerError';
    this.code = code;
  }
}

// The core answers { ok: false, code, message } instead of throwing: make that an exception here.
export function unwrap(result) {
  if (!result.ok) throw new SensorformerError(result.code, result.message);
  return result;
}
