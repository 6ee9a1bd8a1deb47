// The demo server (tools/serve-demo.mjs, `npm start`) as clients see it, bytes on the wire: which
// status each request gets (RFC 9110 / RFC 9112), the security headers on every answer (Node's own
// error answers included), byte ranges against the file's bytes, paths that try to leave demo/,
// web/ and models/, and a seeded barrage of malformed and hostile requests after which the process is still
// alive and serves a normal GET. The server runs as `node tools/serve-demo.mjs` in a child process
// (PORT=0), a fresh one per test, so a crash shows as an exit, not as this runner dying.
//
//   node --test tests/js/serve-demo.test.js
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';

import * as serveDemo from '../../tools/serve-demo.mjs';
import { prng } from './prng.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const script = `${repo}tools/serve-demo.mjs`;
const { CSP } = serveDemo;
const INDEX = readFileSync(`${repo}demo/index.html`);
const S = INDEX.length;
const WEB_INDEX = readFileSync(`${repo}web/src/index.js`);
const PACKAGE_JSON = readFileSync(`${repo}package.json`, 'utf8');
const SERVER_SOURCE = readFileSync(script, 'utf8');
const DEADLINE_MS = 20_000;  // per exchange; only a broken server waits this long (the machine is shared)
const SEED = 0x5eed9;
const ctx = {};

// --- the server in a child process -------------------------------------------------------------

function spawnServer(env = {}) {
  const child = spawn(process.execPath, [script], { cwd: repo, env: { ...process.env, PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (d) => { out.stdout += d; });
  child.stderr.on('data', (d) => { out.stderr += d; });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL printed within ${DEADLINE_MS} ms:\n${out.stdout}${out.stderr}`)), DEADLINE_MS);
    const check = () => {
      const m = /http:\/\/localhost:(\d+)\//.exec(out.stdout);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    };
    child.stdout.on('data', check);
    exited.then(({ code, signal }) => { clearTimeout(timer); reject(new Error(`the server exited (${code ?? signal}) before listening:\n${out.stdout}${out.stderr}`)); });
  });
  return { child, out, ready, exited };
}

// A fresh server per test: one test's crash does not fail the next.
beforeEach(async () => {
  ctx.server = spawnServer();
  ctx.port = await ctx.server.ready;
});

afterEach(async () => {
  if (ctx.server?.child.exitCode === null) {
    ctx.server.child.kill();
    await ctx.server.exited;
  }
});

function assertAlive(what) {
  const { child, out } = ctx.server;
  assert.ok(child.exitCode === null && child.signalCode === null, `the server died (${child.exitCode ?? child.signalCode}) ${what}:\n${out.stderr}`);
}

// --- clients -------------------------------------------------------------------------------------

/** Parses the first response in `buf`: { status, headers (lower-case; repeated ones joined by ', '), count, body } or null. */
function parseResponse(buf, { head = false } = {}) {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3}) /.exec(lines[0]);
  if (!m) return { status: NaN, statusLine: lines[0], headers: {}, count: {}, body: buf.subarray(end + 4), complete: true };
  const headers = {}, count = {};
  for (const line of lines.slice(1)) {
    const i = line.indexOf(':');
    const k = line.slice(0, i).trim().toLowerCase(), v = line.slice(i + 1).trim();
    headers[k] = k in headers ? `${headers[k]}, ${v}` : v;
    count[k] = (count[k] ?? 0) + 1;
  }
  const length = head || Number(m[1]) === 304 || Number(m[1]) < 200 ? 0 : Number(headers['content-length'] ?? NaN);
  const body = buf.subarray(end + 4);
  const complete = Number.isFinite(length) && body.length >= length;
  return { status: Number(m[1]), statusLine: lines[0], headers, count, body: complete ? body.subarray(0, length) : body, complete, rest: complete ? body.subarray(length) : null };
}

/**
 * Writes `bytes` on a fresh connection; resolves once a whole response arrived (or the server
 * closed): { response (first one or null), raw (everything received), closed }.
 * after: 'none' | 'end' (half-close after writing) | 'destroy' (reset after writing).
 */
function exchange(bytes, { after: then = 'none', head = false, wantAll = false } = {}) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(ctx.port, '127.0.0.1');
    let raw = Buffer.alloc(0), done = false;
    const finish = (closed) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ response: parseResponse(raw, { head }), raw, closed });
    };
    const timer = setTimeout(() => {
      done = true;
      socket.destroy();
      reject(new Error(`no complete answer within ${DEADLINE_MS} ms to ${JSON.stringify(String(bytes).slice(0, 120))}; got ${JSON.stringify(raw.toString('latin1').slice(0, 200))}`));
    }, DEADLINE_MS);
    socket.on('connect', () => {
      socket.write(bytes);
      if (then === 'end') socket.end();
      if (then === 'destroy') { socket.resetAndDestroy(); finish(true); }
    });
    socket.on('data', (d) => {
      raw = Buffer.concat([raw, d]);
      const r = parseResponse(raw, { head });
      if (r?.complete && !wantAll) finish(false);
    });
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
  });
}

/** The same through Node's http client: { response } like exchange. */
function viaHttp({ method = 'GET', target, headers = {}, body = null }) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: ctx.port, method, path: target, headers: { Connection: 'close', ...headers }, agent: false, timeout: DEADLINE_MS }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const count = {};
        for (let i = 0; i < res.rawHeaders.length; i += 2) count[res.rawHeaders[i].toLowerCase()] = (count[res.rawHeaders[i].toLowerCase()] ?? 0) + 1;
        resolve({ response: { status: res.statusCode, headers: res.headers, count, body: Buffer.concat(chunks), complete: true } });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${DEADLINE_MS} ms to ${method} ${target}`)));
    req.on('error', reject);
    req.end(body ?? undefined);
  });
}

const request = (method, target, headers = {}, { version = '1.1', host = '127.0.0.1', body = '' } = {}) =>
  `${method} ${target} HTTP/${version}\r\n${host === null ? '' : `Host: ${host}\r\n`}${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}Connection: close\r\n\r\n${body}`;

// --- what each request must get ------------------------------------------------------------------
// A case: { name, send: { raw } | { method, target, headers } (sent raw or through http), status,
// allow, body (Buffer: exact; 'none': empty), range (Content-Range), head }.

const whole = { status: 200, body: INDEX };
const part = (a, b) => ({ status: 206, body: INDEX.subarray(a, b + 1), range: `bytes ${a}-${b}/${S}` });
const unsatisfiable = { status: 416, range: `bytes */${S}` };

// RFC 9110 14.1.1 / 14.1.2 / 14.2: invalid -> ignored (200), valid but outside the file -> 416.
const RANGE_CASES = [
  ['bytes=100-50', whole, 'last-pos < first-pos: invalid, ignored'],
  ['bytes=-5', part(S - 5, S - 1), 'suffix: the last 5 bytes'],
  ['bytes=abc', whole, 'not a byte range: invalid, ignored'],
  ['bytes=0-0', part(0, 0), 'the first byte'],
  ['bytes=10-', part(10, S - 1), 'to the end'],
  ['bytes=5-9', part(5, 9), 'a middle range'],
  ['BYTES=5-9', part(5, 9), 'range units are case-insensitive'],
  ['bytes = 5-9', whole, 'no whitespace around "=": invalid'],
  ['bytes=0-4, 5-9', part(0, 9), 'adjacent ranges coalesce'],
  ['bytes=0-1,,5-6', whole, 'empty list element skipped; two ranges apart: whole file'],
  ['bytes=5-9,20-29', whole, 'ranges apart: whole file (no multipart)'],
  [`bytes=${S}-`, unsatisfiable, 'starts at the end'],
  ['bytes=-0', unsatisfiable, 'a zero-length suffix'],
  [`bytes=${S + 100}-${S + 200}`, unsatisfiable, 'past the end'],
  ['bytes=99999999999999999999-', unsatisfiable, '20-digit first-pos'],
  ['bytes=-99999999', part(0, S - 1), 'suffix longer than the file: the whole file, as a 206'],
  ['bytes=0-99999999999999999999', part(0, S - 1), 'last-pos past the end is cut to the end'],
  [`bytes=0-4,${S}-`, part(0, 4), 'satisfiable when one range is'],
  ['bytes=0-1,9-5', whole, 'one invalid range-spec makes the header invalid'],
  ['items=0-5', whole, 'unknown unit: ignored'],
  ['bytes=', whole, 'empty'],
  ['bytes=-', whole, 'neither position'],
  ['bytes=,', whole, 'only empty elements'],
  ['bytes=1-2-3', whole, 'two dashes'],
  ['bytes=--5', whole, 'negative'],
  ['bytes=0x10-0x20', whole, 'hex'],
  ['bytes=1.5-2', whole, 'fraction'],
  ['=0-5', whole, 'no unit'],
].map(([range, expect, why]) => ({ name: `Range: ${range} (${why})`, send: { method: 'GET', target: '/index.html', headers: { Range: range } }, ...expect }));
RANGE_CASES.push(
  { name: 'Range with If-Range: ignored (our ETags are weak: never a strong match, RFC 9110 13.1.5)', send: { method: 'GET', target: '/index.html', headers: { Range: 'bytes=5-9', 'If-Range': '"x"' } }, ...whole },
  { name: 'Range on HEAD: ignored (range handling is defined for GET only, RFC 9110 14.2)', send: { method: 'HEAD', target: '/index.html', headers: { Range: 'bytes=0-0' } }, status: 200, head: true, length: S },
  { name: 'Range on a missing file: 404', send: { method: 'GET', target: '/nope.html', headers: { Range: 'bytes=0-0' } }, status: 404 },
);

const METHOD_CASES = [
  ...['POST', 'PUT', 'DELETE', 'OPTIONS', 'TRACE', 'PATCH', 'PROPFIND'].map((method) => ({
    name: `${method}: 405`, send: { method, target: '/index.html' }, status: 405, allow: 'GET, HEAD',
  })),
  { name: 'POST with a body: 405', send: { method: 'POST', target: '/index.html', headers: { 'Content-Type': 'text/plain', 'Content-Length': '5' }, body: 'hello' }, status: 405, allow: 'GET, HEAD' },
  { name: 'POST announcing 10 MB and sending 3 bytes: 405 at once', send: { raw: request('POST', '/', { 'Content-Length': '10000000' }, { body: 'abc' }) }, status: 405, allow: 'GET, HEAD' },
  { name: 'OPTIONS *: 405', send: { raw: request('OPTIONS', '*') }, status: 405, allow: 'GET, HEAD' },
  { name: 'CONNECT: 405', send: { raw: request('CONNECT', '127.0.0.1:9', {}, { host: '127.0.0.1:9' }) }, status: 405, allow: 'GET, HEAD' },
  { name: 'an unknown method (FOO): 501 (RFC 9110 9.1)', send: { raw: request('FOO', '/index.html') }, status: 501 },
  { name: 'an unknown method (GETX): 501', send: { raw: request('GETX', '/index.html') }, status: 501 },
  { name: 'HEAD: headers of the file, no body', send: { method: 'HEAD', target: '/index.html' }, status: 200, head: true, length: S },
];

const SYNTAX_CASES = [
  ['a request line that is one word', 'GARBAGE\r\n\r\n', 400],
  ['a method alone', 'GET\r\n\r\n', 400],
  ['HTTP/1.1 without Host (RFC 9112 3.2)', request('GET', '/', {}, { host: null }), 400],
  ['two Host fields (RFC 9112 3.2)', request('GET', '/', { Host: 'example.org' }), 400],
  ['a Host with a space (RFC 9112 3.2)', request('GET', '/', {}, { host: 'exa mple' }), 400],
  ['HTTP/2.0 in an HTTP/1 request line: 505', request('GET', '/', {}, { version: '2.0' }), 505],
  ['HTTP/9.9: 505', request('GET', '/', {}, { version: '9.9' }), 505],
  ['HTTP/1.x', request('GET', '/', {}, { version: '1.x' }), 400],
  ['bare LF line ends', 'GET / HTTP/1.1\nHost: x\nConnection: close\n\n', 400],
  ['Content-Length: abc', request('GET', '/', { 'Content-Length': 'abc' }), 400],
  ['Content-Length and Transfer-Encoding (RFC 9112 6.1)', request('GET', '/', { 'Content-Length': '1', 'Transfer-Encoding': 'chunked' }), 400],
  ['obs-fold (RFC 9112 5.2)', 'GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\nConnection: close\r\n\r\n', 400],
  ['whitespace before the colon (RFC 9112 5.1)', 'GET / HTTP/1.1\r\nHost : x\r\nConnection: close\r\n\r\n', 400],
  ['a header line without a colon', 'GET / HTTP/1.1\r\nHost: x\r\nBroken\r\nConnection: close\r\n\r\n', 400],
  ['NUL in the target', request('GET', '/index.html\0'), 400],
  ['NUL in a header value (RFC 9110 5.5)', request('GET', '/', { 'X-A': 'a\0b' }), 400],
  ['a tab in the target', request('GET', '/a\tb'), 400],
  ['bytes above 0x7f in the target', Buffer.from(request('GET', '/\x80\xff'), 'latin1'), 400],
  ['asterisk-form on GET (RFC 9112 3.2.4: OPTIONS only)', request('GET', '*'), 400],
  ['authority-form on GET (RFC 9112 3.2.3: CONNECT only)', request('GET', '127.0.0.1:80'), 400],
  ['Expect: teapot (RFC 9110 10.1.1)', request('GET', '/', { Expect: 'teapot' }), 417],
  [`a ${MAX_TARGET()}+-octet target: 414`, request('GET', `/${'a'.repeat(10_000)}`), 414],
  ['a 20 KiB target: over the 16 KiB request head, 431', request('GET', `/${'a'.repeat(20_000)}`), 431],
  ['a 20 KiB header: 431 (RFC 6585)', request('GET', '/', { 'X-Big': 'a'.repeat(20_000) }), 431],
  ['3000 small headers: 431', request('GET', '/', Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`X-${i}`, 'a']))), 431],
].map(([name, raw, status]) => ({ name, send: { raw }, status }));
SYNTAX_CASES.push(
  { name: 'HTTP/1.0 without Host: fine', send: { raw: request('GET', '/', {}, { version: '1.0', host: null }) }, ...whole },
  { name: 'absolute-form (RFC 9112 3.2.2: must be accepted)', send: { raw: request('GET', 'http://127.0.0.1/index.html') }, ...whole },
  { name: 'Expect: 100-continue: the final answer at once, no interim 100', send: { raw: request('GET', '/', { Expect: '100-continue' }) }, ...whole },
  { name: 'Upgrade: websocket: served as a normal GET', send: { raw: request('GET', '/', { Upgrade: 'websocket', Connection: 'Upgrade' }) }, ...whole },
  { name: 'a 304 keeps the security headers', send: { method: 'GET', target: '/index.html', headers: { 'If-Modified-Since': new Date(Date.now() + 86_400_000).toUTCString() } }, status: 304, body: 'none' },
);

function MAX_TARGET() { return serveDemo.MAX_TARGET_LENGTH ?? 8000; }

// Dot segments go as a URL parser removes them (RFC 3986 5.2.4); what is left must stay inside.
const TRAVERSAL_CASES = [
  ['/../package.json', 404], ['/web/../tools/serve-demo.mjs', 404], ['/web/../index.html', 200],
  ['/%2e%2e/package.json', 404], ['/%2E%2E/%2e%2E/package.json', 404], ['/web/%2e%2e/%2e%2e/package.json', 404],
  ['/..%2fpackage.json', 403], ['/web/..%2f..%2fpackage.json', 403], ['/web/..%2ftools%2fserve-demo.mjs', 403],
  ['/..\\package.json', 404], ['/..%5cpackage.json', 403], ['/web/..%5c..%5cpackage.json', 403],
  ['/index.html%00', 400], ['/index.html%00.js', 400], ['/%zz', 400],
  ['//etc/passwd', 404], ['/%2fetc%2fpasswd', 404], ['/web/dist/../../package.json', 404], ['/web/src/../../package.json', 404],
  ['/%252e%252e/package.json', 404], ['/.git/config', 404], ['/web/.gitignore', 404], ['/ui', 404], ['/ui/', 404], ['/index.html/', 404],
  ['http://127.0.0.1/../package.json', 404], ['http://127.0.0.1/web/..%2f..%2fpackage.json', 403],
  ['/models/../package.json', 404], ['/models/..%2fpackage.json', 403], ['/models/%2e%2e/tools/serve-demo.mjs', 404], ['/models/', 404], ['/models/../index.html', 200],
].map(([target, status]) => ({ name: `GET ${target}: ${status}`, send: { raw: request('GET', target) }, status, ...(status === 200 ? { body: INDEX } : {}) }));
TRAVERSAL_CASES.push({ name: 'GET /web/src/index.js: the package file', send: { method: 'GET', target: '/web/src/index.js' }, status: 200, body: WEB_INDEX });
// /models/ is the repository's models/ (the demo's Rhythm card loads models/af.safetensors), once
// the file is there.
const AF_MODEL = `${repo}models/af.safetensors`;
if (existsSync(AF_MODEL)) TRAVERSAL_CASES.push({ name: 'GET /models/af.safetensors: the AF model', send: { method: 'GET', target: '/models/af.safetensors' }, status: 200, body: readFileSync(AF_MODEL) });

/** Sends a case (raw, or through http when `viaClient` and the case allows) and checks the answer. */
async function check(c, { viaClient = false } = {}) {
  const useHttp = viaClient && !c.send.raw;
  const sent = useHttp ? viaHttp(c.send) : exchange(c.send.raw ?? request(c.send.method, c.send.target, c.send.headers, { body: c.send.body ?? '' }), { head: c.head });
  const where = `${c.name} (${useHttp ? 'http client' : 'raw socket'})`;
  const { response: r, raw } = await sent.catch(async (e) => {
    // A failure path only: give a crashing server a moment to be seen exiting, for the message.
    const { child, out, exited } = ctx.server;
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 2000))]);
    throw new Error(`${where}: ${e.message}; the server ${child.exitCode === null && child.signalCode === null ? 'is alive' : `exited (${child.exitCode ?? child.signalCode}):\n${out.stderr}`}`);
  });
  assert.ok(r, `${where}: no response (got ${JSON.stringify(raw?.toString('latin1').slice(0, 200))})`);
  assert.equal(r.status, c.status, `${where}: status ${r.status}${r.statusLine ? ` (${r.statusLine})` : ''}`);
  assert.equal(r.headers['content-security-policy'], CSP, `${where}: the CSP header`);
  assert.equal(r.count['content-security-policy'], 1, `${where}: one CSP header`);
  assert.equal(r.headers['x-content-type-options'], 'nosniff', `${where}: nosniff`);
  if (c.allow) assert.equal(r.headers.allow, c.allow, `${where}: Allow`);
  if (c.range) assert.equal(r.headers['content-range'], c.range, `${where}: Content-Range`);
  else if (r.status !== 416) assert.equal(r.headers['content-range'], undefined, `${where}: no Content-Range`);
  if (Buffer.isBuffer(c.body)) assert.ok(r.body.equals(c.body), `${where}: the body is not the file's ${c.body.length} bytes (${r.body.length} bytes)`);
  if (c.body === 'none' || c.head) assert.equal(r.body.length, 0, `${where}: a body on a response that has none`);
  if (c.length !== undefined) assert.equal(Number(r.headers['content-length']), c.length, `${where}: Content-Length`);
  const text = r.body.toString('latin1');
  assert.ok(!text.includes(PACKAGE_JSON.slice(0, 40)) && !text.includes(SERVER_SOURCE.slice(0, 60)), `${where}: a file outside demo/, web/ and models/ was served`);
  if (r.status >= 400 && c.status !== 404) assert.ok(!r.body.equals(INDEX), `${where}: an error answer carries the file`);
  return r;
}

// --- tests ---------------------------------------------------------------------------------------

test('GET serves demo/ and /web/ with the security headers; every other method gets 405 with Allow: GET, HEAD', async () => {
  for (const c of METHOD_CASES) await check(c, { viaClient: true });
  const r = await check({ name: 'GET /', send: { method: 'GET', target: '/' }, ...whole }, { viaClient: true });
  assert.match(r.headers['content-type'], /^text\/html/);
  for (const c of METHOD_CASES) if (!c.send.raw) await check(c);  // the same on raw sockets
  assertAlive('after the methods');
});

test('Range per RFC 9110 section 14: invalid ignored (200), suffix ranges, unsatisfiable 416 with bytes */size', async () => {
  for (const c of RANGE_CASES) {
    await check(c, { viaClient: true });
    await check(c);
  }
  assertAlive('after the ranges');
});

test("Node's own error answers (400, 417, 431, 501, 505) carry the CSP and nosniff headers; request-line and header edge cases", async () => {
  for (const c of SYNTAX_CASES) await check(c);
  assertAlive('after the malformed requests');
});

test('paths that try to leave demo/, web/ and models/ get 403/404/400, never a file from outside', async () => {
  for (const c of TRAVERSAL_CASES) await check(c);
  assertAlive('after the traversal attempts');
});

test('an exception inside a request handler answers 500 and the server keeps serving', async () => {
  const errors = [];
  const server = await serveDemo.startServer({
    port: 0,
    onError: (e) => errors.push(e.message),
    handle(req, res) {
      if (req.url === '/sync') throw new Error('sync');
      if (req.url === '/async') return Promise.reject(new Error('async'));
      if (req.url === '/late') {
        res.writeHead(200, { 'Content-Length': '100' });
        res.write('partial');
        throw new Error('late');
      }
      return serveDemo.serveStatic(req, res);
    },
  });
  const port = server.address().port;
  try {
    const get = (path) => new Promise((resolve) => {
      http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, csp: res.headers['content-security-policy'], body: Buffer.concat(chunks), complete: res.complete }));
        res.on('error', () => resolve({ status: res.statusCode, aborted: true }));
      }).on('error', (e) => resolve({ error: e.code }));
    });
    for (const path of ['/sync', '/async']) {
      const r = await get(path);
      assert.equal(r.status, 500, `${path}: ${JSON.stringify(r)}`);
      assert.equal(r.csp, CSP, `${path}: the CSP header`);
    }
    const late = await get('/late');
    assert.ok(late.aborted || late.error || late.complete === false, `/late: a half-sent body must not arrive as complete: ${JSON.stringify(late)}`);
    const ok = await get('/index.html');
    assert.equal(ok.status, 200);
    assert.ok(ok.body.equals(INDEX));
    assert.deepEqual(errors, ['sync', 'async', 'late']);
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

test('a seeded barrage of malformed and hostile requests: each gets its RFC answer, the process lives, then a normal GET is served', async () => {
  const rand = prng(SEED);
  const pick = (xs) => xs[Math.floor(rand() * xs.length)];
  const jobs = [];
  const tabled = [...METHOD_CASES, ...RANGE_CASES, ...SYNTAX_CASES, ...TRAVERSAL_CASES];
  for (const c of tabled) jobs.push(() => check(c, { viaClient: rand() < 0.5 }));
  // Random garbage: the first byte is not a token character nor whitespace, so no request line
  // can start: 400.
  const notToken = [...Array(256).keys()].filter((b) => !/[!#$%&'*+.^_`|~0-9A-Za-z\- \t\r\n\v\f-]/.test(String.fromCharCode(b)));
  for (let i = 0; i < 40; i++) {
    const bytes = Buffer.from([pick(notToken), ...Array.from({ length: Math.floor(rand() * 300) }, () => Math.floor(rand() * 256))]);
    const tail = rand() < 0.5 ? Buffer.from('\r\n\r\n') : Buffer.alloc(0);
    jobs.push(() => check({ name: `garbage #${i} (${bytes.length} bytes)`, send: { raw: Buffer.concat([bytes, tail]) }, status: 400 }));
  }
  // Random combinations: the method decides first (405), then the path, then the Range.
  const methods = ['GET', 'GET', 'HEAD', 'POST', 'DELETE', 'PATCH'];
  const paths = TRAVERSAL_CASES.filter((c) => c.send.raw && !c.send.raw.includes('http://'));
  for (let i = 0; i < 60; i++) {
    const method = pick(methods);
    const usePath = rand() < 0.5;
    const base = usePath ? pick(paths) : pick(RANGE_CASES.filter((c) => c.send.method === 'GET'));
    const target = usePath ? base.send.raw.split(' ')[1] : base.send.target;
    const headers = usePath ? {} : base.send.headers;
    let expect;
    if (method !== 'GET' && method !== 'HEAD') expect = { status: 405, allow: 'GET, HEAD' };
    else if (method === 'HEAD') expect = { status: base.status === 206 || base.status === 416 ? 200 : base.status, head: true };
    else expect = { status: base.status, body: base.body, range: base.range };
    jobs.push(() => check({ name: `random #${i}: ${method} ${target} ${JSON.stringify(headers)}`, send: { raw: request(method, target, headers) }, ...expect }));
  }
  // Connections that end early or never speak.
  const idle = net.connect(ctx.port, '127.0.0.1');
  idle.on('error', () => {});
  for (let i = 0; i < 10; i++) {
    // Node's http server ends a connection whose client half-closed it (httpAllowHalfOpen is
    // off), dropping a response still being read from disk: an answer may or may not come, and
    // when one does it must be the right one.
    jobs.push(async () => {
      const { response, raw, closed } = await exchange(request('GET', '/index.html').replace('Connection: close\r\n', ''), { after: 'end', wantAll: true });
      assert.ok(closed, 'the server closed the half-closed connection');
      if (raw.length) {
        assert.equal(response?.status, 200, `a whole request, then a half-close: ${raw.toString('latin1').slice(0, 100)}`);
        assert.ok(response.body.equals(INDEX));
      }
    });
    jobs.push(async () => {
      const { response } = await exchange('GET /index.html HTTP/1.1\r\nHost: x\r\n', { after: 'end' });
      assert.equal(response?.status, 400, 'half a request, then a half-close: 400');
      assert.equal(response.headers['content-security-policy'], CSP);
    });
    jobs.push(() => exchange(`GET /index.html HTTP/1.1\r\nHost: x\r\nRange: bytes=${100 - i}-${50 - i}\r\n`, { after: 'destroy' }));
    jobs.push(() => exchange(Buffer.alloc(0), { after: 'destroy' }));
  }
  // Pipelined: a good request, then garbage in the same packet. The server must not answer the
  // first request with the garbage's 400: what arrives (if anything) is the first request's 200.
  for (let i = 0; i < 5; i++) {
    jobs.push(async () => {
      const { raw } = await exchange(`GET /index.html HTTP/1.1\r\nHost: x\r\n\r\nGARBAGE\r\n\r\n`, { wantAll: true });
      if (raw.length) {
        const r = parseResponse(raw);
        assert.equal(r?.status, 200, `pipelined: ${raw.toString('latin1').slice(0, 100)}`);
      }
    });
  }
  // Seeded order, 8 at a time.
  for (let i = jobs.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [jobs[i], jobs[j]] = [jobs[j], jobs[i]];
  }
  let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next < jobs.length) await jobs[next++]();
  }));
  idle.destroy();
  assertAlive(`after ${jobs.length} requests`);
  const r = await check({ name: 'GET / after the barrage', send: { method: 'GET', target: '/' }, ...whole }, { viaClient: true });
  assert.match(r.headers['content-type'], /^text\/html/);
  await check({ name: 'GET /web/src/index.js after the barrage', send: { method: 'GET', target: '/web/src/index.js' }, status: 200, body: WEB_INDEX });
  assert.equal(ctx.server.out.stderr, '', 'the server logged errors (an exception in a handler?)');
  console.log(`[serve-demo] barrage: ${jobs.length} requests (seed ${SEED}), server alive, GET / -> 200`);
});

test('PORT must be an integer 0-65535: a clear message and exit code 1', async () => {
  for (const port of ['abc', '-1', '65536', '80.5']) {
    const s = spawnServer({ PORT: port });
    s.ready.catch(() => {});
    const { code } = await s.exited;
    assert.equal(code, 1, `PORT=${port}: exit ${code}\n${s.out.stderr}`);
    assert.match(s.out.stderr, /PORT must be an integer from 0 to 65535/, `PORT=${port}`);
    assert.doesNotMatch(s.out.stderr, /\n\s+at /, `PORT=${port}: a stack trace instead of a message`);
  }
});

test('byteRanges (the Range decision, run inside send\'s file callback) is total: any header, any size -> null or ranges inside the file', () => {
  assert.equal(typeof serveDemo.byteRanges, 'function', 'tools/serve-demo.mjs exports byteRanges');
  const header = fc.oneof(
    fc.string(),
    fc.array(fc.oneof(fc.constantFrom('', ' ', '-', ',', '=', 'bytes', 'BYTES', 'x'), fc.bigInt({ min: 0n, max: 10n ** 25n }).map(String)), { maxLength: 12 }).map((xs) => xs.join('')),
    fc.array(fc.tuple(fc.option(fc.nat(2000)), fc.option(fc.nat(2000))), { minLength: 1, maxLength: 5 })
      .map((xs) => `bytes=${xs.map(([a, b]) => `${a ?? ''}-${b ?? ''}`).join(',')}`),
  );
  fc.assert(fc.property(header, fc.nat(1500), (value, size) => {
    const r = serveDemo.byteRanges(value, size);
    if (r === null) return true;
    assert.ok(Array.isArray(r));
    for (const [a, b] of r) assert.ok(Number.isSafeInteger(a) && Number.isSafeInteger(b) && a >= 0 && a <= b && b < size, `${JSON.stringify(value)} size ${size} -> ${JSON.stringify(r)}`);
    return true;
  }), { seed: SEED, numRuns: 3000 });
});
