// Errors of the Bluetooth layer. Both are SensorformerErrors with a stable `code`:
//   DECODE_ERROR           bytes from a device (or a recording) that do not match the layout they
//                          claim; `profile` names the characteristic, `offset` the byte at which
//                          decoding stopped.
//   BLUETOOTH_UNAVAILABLE  Web Bluetooth cannot be used here; `reason` says why.
import { SensorformerError } from '../errors.js';

export class BluetoothDecodeError extends SensorformerError {
  // `message` should say what was expected, e.g.
  // "heart rate: flags say an RR list follows but 1 byte remains at offset 4".
  constructor(profile, offset, message, options) {
    super('DECODE_ERROR', message, options);
    this.name = 'BluetoothDecodeError';
    this.profile = profile;
    this.offset = offset;
  }
}

export const BLUETOOTH_UNAVAILABLE_REASONS = Object.freeze([
  'no-api',               // navigator.bluetooth does not exist (Firefox, Safari, Node, flags off)
  'insecure-context',     // the page is not a secure context (https or localhost)
  'adapter-unavailable',  // getAvailability() says there is no usable adapter
  'permission-denied',    // the user or a policy refused access
]);

const DEFAULT_MESSAGES = {
  'no-api': 'Web Bluetooth is not available in this browser; recorded or simulated streams still work',
  'insecure-context': 'Web Bluetooth needs a secure context (https:// or localhost)',
  'adapter-unavailable': 'no Bluetooth adapter is available',
  'permission-denied': 'permission to use Bluetooth was denied',
};

export class BluetoothUnavailableError extends SensorformerError {
  constructor(reason, message, options) {
    super('BLUETOOTH_UNAVAILABLE',
      message ?? DEFAULT_MESSAGES[reason] ?? `Web Bluetooth is unavailable (${reason})`, options);
    this.name = 'BluetoothUnavailableError';
    this.reason = reason;
  }
}
