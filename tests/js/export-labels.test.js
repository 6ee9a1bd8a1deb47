// tools/reference/export.py's labels against the runtime's loader: a file exported with labels
// loads with them (model.info.outputs.labels, model.config.labels), and every bad
// labels case the exporter refuses, the loader refuses too (BAD_FORMAT naming "labels"), so the
// exporter never writes a file the runtime would reject for its labels, nor refuses one it takes.
// Needs /usr/bin/python3 with torch (the PyTorch reference); skipped, saying why, without it.
//
//   node --test tests/js/export-labels.test.js
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { loadModel } from '../../web/src/index.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const PY = '/usr/bin/python3';
const script = path.join(repo, 'tools/reference/test_export.py');
const probe = spawnSync(PY, ['-c', 'import torch, numpy'], { encoding: 'utf8' });
const skip = probe.status === 0 ? false : `${PY} cannot import torch and numpy (the PyTorch reference): ${(probe.stderr || probe.error?.message || '').trim().split('\n').at(-1)}`;
// torch's import alone takes seconds on a loaded machine; the checks are milliseconds.
const PY_TIMEOUT_MS = 180_000;

test('export.py: its own checks (labels written, bad labels refused with what is wrong)', { skip }, () => {
  const r = spawnSync(PY, [script], { encoding: 'utf8', timeout: PY_TIMEOUT_MS });
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  assert.match(r.stderr, /Ran [1-9]\d* tests?[\s\S]*\nOK\s*$/);
});

test('export.py and the loader agree: exported labels load; each case the exporter refuses, the loader refuses', { skip }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sf-export-labels-'));
  try {
    const r = spawnSync(PY, [script, '--write', dir], { encoding: 'utf8', timeout: PY_TIMEOUT_MS });
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
    const cases = JSON.parse(readFileSync(path.join(dir, 'cases.json'), 'utf8'));
    const [good, ...bad] = cases;
    const model = await loadModel(path.join(dir, good.file));
    try {
      assert.deepEqual([...model.info.outputs.labels], good.labels);
      assert.deepEqual(model.config.labels, good.labels);
    } finally {
      model.dispose();
    }
    assert.ok(bad.length >= 5);
    for (const c of bad) {
      assert.ok(c.exporter, `the exporter took labels ${JSON.stringify(c.labels)}`);
      await assert.rejects(loadModel(path.join(dir, c.file)), (e) => {
        assert.equal(e.code, 'BAD_FORMAT', `${JSON.stringify(c.labels)}: ${e.code} ${e.message}`);
        assert.match(e.message, /"labels" must be an array of 3 distinct names/);
        return true;
      }, `the loader took labels ${JSON.stringify(c.labels)} that the exporter refuses`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
