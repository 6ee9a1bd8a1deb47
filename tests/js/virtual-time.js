// Test helper for the Bluetooth layer on the simulator's virtual clock.

/**
 * Advances the virtual clock in small steps until `promise` settles: a deadline in virtual
 * seconds, not a fixed amount of time that happens to be enough. Resolves to its value.
 */
export async function settle(clock, promise, { step = 0.01, deadline = 10 } = {}) {
  let state = null;
  promise.then((value) => { state = { value }; }, (error) => { state = { error }; });
  for (let t = 0; !state; t += step) {
    if (t > deadline) throw new Error(`not settled within ${deadline} s of virtual time`);
    await clock.advanceAsync(step);
  }
  if ('error' in state) throw state.error;
  return state.value;
}
