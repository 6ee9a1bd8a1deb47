// sensorformer/simulator: a simulated navigator.bluetooth (chest strap, thermometer, oximeter, optical armband that
// send the bytes real devices send) and the clocks to drive it. Its own entry point so that apps
// that only connect real devices (sensorformer/ble) do not ship it. Options and behaviour:
// web/src/simulator/devices.js (the devices), armband.js (the optical armband) and physiology.js
// (the body); types: web/simulator.d.ts.
export { createSimulatedBluetooth, SIMULATOR_OPTIONS, H10_ACC_RATES_HZ, DEVICE_KEYS } from './devices.js';
export { createVirtualClock, createRealClock } from '../ble/fake-gatt.js';
// The body alone (ECG, beats, rhythm as functions of time): signals for a model without Bluetooth.
export { createPhysiology } from './physiology.js';
