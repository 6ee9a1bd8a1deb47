// evaluate_af.py's test conditions as read from their names (tools/af/conditions.py, plain Python:
// no PyTorch needed). Every score of docs/models.md's conditions tables rests on this reading; until
// 2026-12-05 the rate was read from the name's start, so "strap-r130-drop20" ran at 300 Hz. The
// expected values are written out by hand from the card's definitions (the rate is 130 Hz wherever
// "r130" stands; drop5 / drop20 lose 5 % / 20 % of the notifications; a strap condition and a
// "-known" one lose the very samples of the condition without those parts). Skipped, saying so,
// on a machine without python3.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

const script = new URL('../../tools/af/conditions.py', import.meta.url).pathname;
const python = ['/usr/bin/python3', 'python3'].find((p) => spawnSync(p, ['--version']).status === 0);
const skip = python ? false : 'no python3 on this machine';

const run = (...names) => spawnSync(python, [script, ...names], { encoding: 'utf8' });

const row = (condition, rate, drop, { zeros = false, strap = false, known = false, losses = condition } = {}) =>
  ({ condition, rate, drop, zeros, strap, known, losses });

test('conditions: each part read wherever it stands in the name', { skip }, () => {
  const expected = [
    row('clean', 300, 0),
    row('r130', 130, 0),
    row('drop5', 300, 0.05),
    row('drop20', 300, 0.2),
    row('drop5-zeros', 300, 0.05, { zeros: true }),
    row('drop20-zeros', 300, 0.2, { zeros: true }),
    row('r130-drop20', 130, 0.2),
    // the case the old reading got wrong: "strap-" first, and the rate still 130 Hz
    row('strap-r130-drop20', 130, 0.2, { strap: true, losses: 'r130-drop20' }),
    row('strap-drop20', 300, 0.2, { strap: true, losses: 'drop20' }),
    row('r130-drop20-known', 130, 0.2, { known: true, losses: 'r130-drop20' }),
    row('drop20-known', 300, 0.2, { known: true, losses: 'drop20' }),
  ];
  const out = run(...expected.map((r) => r.condition));
  assert.equal(out.status, 0, out.stderr);
  const got = out.stdout.trimEnd().split('\n').map((line) => JSON.parse(line));
  assert.deepEqual(got, expected);
});

test('conditions: a name with an unknown, repeated or contradictory part is refused, naming it', { skip }, () => {
  for (const name of ['130-drop20', 'r130-r130', 'clean-drop20', 'drop5-drop20', 'zeros', 'strap', 'strap-r130', 'drop10', '']) {
    const out = run(name);
    assert.equal(out.status, 2, `${JSON.stringify(name)}: exit status`);
    assert.equal(out.stdout, '', `${JSON.stringify(name)}: nothing read`);
    assert.match(out.stderr, new RegExp(`condition '${name}'`), `${JSON.stringify(name)}: the error names it`);
  }
});
