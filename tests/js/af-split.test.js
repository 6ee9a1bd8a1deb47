// The committed CinC 2017 split (tools/af/split/, made by tools/af/make_split.py; issue 20): record
// names only. Without the data: the files are well formed, the folds partition 8,528 records, the
// test part is fold 0 and train + validation are the other four. With the data (SF_CINC2017 = the
// challenge's training set folder; .ci/run passes ../shared/data/cinc2017): every class is dealt
// evenly (each fold holds a fifth of each class, +-1 record), and make_split.py run again on the
// data writes the same files, byte for byte (python3; skipped, saying so, without it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dir = new URL('../../tools/af/split/', import.meta.url).pathname;
const read = (name) => readFileSync(join(dir, name), 'utf8');
const names = (name) => read(name).trimEnd().split('\n');
const FILES = ['fold0.txt', 'fold1.txt', 'fold2.txt', 'fold3.txt', 'fold4.txt', 'train.txt', 'validation.txt', 'test.txt'];
const data = process.env.SF_CINC2017 ?? '';
const haveData = data !== '' && existsSync(join(data, 'REFERENCE.csv'));
const why = data === '' ? 'SF_CINC2017 is not set (the CinC 2017 training set folder)' : `${data} has no REFERENCE.csv`;

test('the split files: sorted record names, 5 disjoint folds of 8,528 records, test = fold 0, train + validation = folds 1-4', () => {
  for (const f of FILES) {
    const n = names(f);
    assert.ok(n.every((r) => /^A\d{5}$/.test(r)), `${f}: record names only`);
    assert.deepEqual(n, [...n].sort(), `${f} is sorted`);
    assert.equal(new Set(n).size, n.length, `${f}: no record twice`);
  }
  const folds = [0, 1, 2, 3, 4].map((k) => names(`fold${k}.txt`));
  const all = folds.flat();
  assert.equal(all.length, 8528);
  assert.equal(new Set(all).size, 8528, 'the folds are disjoint');
  for (const f of folds) assert.ok(Math.abs(f.length - 8528 / 5) <= 4, `fold of ${f.length}`);
  assert.deepEqual(names('test.txt'), folds[0]);
  const rest = folds.slice(1).flat().sort();
  const trainVal = [...names('train.txt'), ...names('validation.txt')].sort();
  assert.deepEqual(trainVal, rest);
  assert.equal(new Set(trainVal).size, trainVal.length, 'train and validation are disjoint');
  assert.ok(Math.abs(names('validation.txt').length - rest.length / 8) <= 4);
});

test('with the data: every class dealt evenly over the folds; make_split.py writes the same files', { skip: haveData ? false : why }, () => {
  const labels = new Map(readFileSync(join(data, 'REFERENCE.csv'), 'utf8').trimEnd().split('\n').slice(1).map((l) => l.trim().split(',')));
  assert.equal(labels.size, 8528);
  for (const c of ['N', 'A', 'O', '~']) {
    const total = [...labels.values()].filter((v) => v === c).length;
    for (let k = 0; k < 5; k++) {
      const n = names(`fold${k}.txt`).filter((r) => labels.get(r) === c).length;
      assert.ok(Math.abs(n - total / 5) <= 1, `class ${c}: fold ${k} holds ${n} of ${total}`);
    }
  }
  let python = null;
  for (const p of ['/usr/bin/python3', 'python3']) {
    try { execFileSync(p, ['--version'], { stdio: 'ignore' }); python = p; break; } catch { /* next */ }
  }
  if (!python) { console.log('# make_split.py not re-run: no python3 on this machine'); return; }
  const out = mkdtempSync(join(tmpdir(), 'sf-split-'));
  execFileSync(python, [new URL('../../tools/af/make_split.py', import.meta.url).pathname, '--data', data, '--out', out], { stdio: 'ignore' });
  for (const f of FILES) assert.equal(readFileSync(join(out, f), 'utf8'), read(f), `${f} as committed`);
});
