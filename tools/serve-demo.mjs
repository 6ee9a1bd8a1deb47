#!/usr/bin/env node
// `npm start`: serves the demo on localhost with a strict Content-Security-Policy.
//   /        -> demo/
//   /web/    -> web/ (the package: src/, dist/ with the .wasm)
//   /models/ -> models/ (the models the package ships: the AF model, models/af.safetensors, is the
//               demo's Rhythm card's default, `?afModel=`)
// Web Bluetooth needs a secure context: http://localhost is one.
//
// `send` (the file server under Express's serve-static) reads the files: MIME types (application/wasm
// included), conditional GET, byte ranges via range-parser, and a refusal of `..` and NUL in paths.
// sirv served them before; its Range code crashed the process on `bytes=100-50` (a read stream
// with start > end) and answered `bytes=-5` and `bytes=0-0` with the wrong bytes, and the file
// size it needs to fix that is not known in front of it. This file validates what send takes
// on trust: the method, the request line, Host, and the Range syntax (RFC 9110 section 14), and
// writes every answer Node would otherwise write on its own ('clientError', 'checkExpectation',
// CONNECT), so that every response carries the security headers below.
//
// Decisions (RFC 9110 / RFC 9112 where they leave a choice):
//   - Only GET and HEAD: 405 with `Allow: GET, HEAD`; a method Node's parser does not know
//     (`FOO / HTTP/1.1`) gets 501 (RFC 9110 9.1); CONNECT 405.
//   - Range: a syntactically invalid header, an unknown unit, a Range on HEAD and any If-Range are
//     ignored (200 with the whole file; the RFC lets a server ignore Range). Valid but
//     unsatisfiable: 416 with `Content-Range: bytes */<size>`. Several ranges: coalesced if they
//     touch, otherwise the whole file (200); no multipart/byteranges.
//   - `..` segments are removed as a URL parser removes them (RFC 3986 5.2.4) before routing:
//     `/web/../index.html` is the demo's index.html, `/../package.json` is /package.json (404). A
//     `..` that survives as an encoded slash (`/..%2fpackage.json`) gets 403 from send.
//   - A request-target over 8000 octets: 414 (RFC 9110 4.1 asks servers to take at least 8000).
//     A request line plus headers over Node's 16 KiB limit: 431, also when it is the target that is
//     too long (Node's parser does not tell the two apart).
//   - A directory without a trailing slash: 404 (no redirect, so no redirect to `//host`).
//   - An exception in a request handler: 500 (or, once the headers are out, the connection is
//     cut so a partial body cannot pass as whole) and the server keeps serving.
import { STATUS_CODES, createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import send from 'send';

// No 'unsafe-eval' anywhere: WebAssembly compiles under 'wasm-unsafe-eval', and the Embind glue is
// built with -sDYNAMIC_EXECUTION=0 so it never calls eval or new Function.
export const CSP = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "worker-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "style-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'none'",
].join('; ');

/** On every response, the error answers included. */
export const SECURITY_HEADERS = {
  'Content-Security-Policy': CSP,
  'X-Content-Type-Options': 'nosniff',
  // With COOP same-origin, COEP require-corp makes the page cross-origin isolated, which is what
  // gives it SharedArrayBuffer and so sensorformer's threaded build (numThreads; everything the
  // demo loads is same-origin, so nothing needs a CORP header of its own).
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};
export const ALLOW = 'GET, HEAD';
export const MAX_TARGET_LENGTH = 8000;

const root = fileURLToPath(new URL('..', import.meta.url));
const ROUTES = [
  { prefix: '/web/', dir: `${root}web` },
  { prefix: '/models/', dir: `${root}models` },
  { prefix: '/', dir: `${root}demo` },
];

// RFC 9110 5.6.2 token (a method, a range unit); RFC 9112 3 request-line with an HTTP-version.
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) [^\s]+ HTTP\/(\d)\.\d\r\n/;
// RFC 9110 7.2 Host = uri-host [ ":" port ]: reg-name / IPv4 / IP-literal characters only.
const HOST = /^[A-Za-z0-9._~!$&'()*+,;=%:[\]-]*$/;

/**
 * The byte ranges a Range header asks of a `size`-byte file (RFC 9110 14.1.1, 14.1.2):
 *   null      ignore the header (200, whole file): not `bytes=` (the unit is case-insensitive)
 *             followed by a comma list of int-range `first-[last]` (last >= first) or
 *             suffix-range `-length`; empty list elements are skipped (RFC 9110 5.6.1);
 *   []        unsatisfiable (416): no range starts inside the file (`bytes=<size>-`, `bytes=-0`,
 *             anything on an empty file);
 *   [[a, b]]  inclusive byte positions, in request order: last-pos cut to the end, a suffix
 *             longer than the file is the whole file.
 * Total: any string in, never a throw (positions of any length compare exactly as BigInt).
 */
export function byteRanges(value, size) {
  if (typeof value !== 'string') return null;
  const eq = value.indexOf('=');
  const unit = value.slice(0, Math.max(eq, 0));
  if (eq < 1 || !TOKEN.test(unit) || unit.toLowerCase() !== 'bytes') return null;
  const n = BigInt(size);
  const ranges = [];
  let specs = 0;
  for (const element of value.slice(eq + 1).split(',')) {
    const spec = element.trim();
    if (spec === '') continue;
    const m = /^(\d*)-(\d*)$/.exec(spec);
    if (!m || (m[1] === '' && m[2] === '')) return null;
    specs++;
    if (m[1] === '') {
      const suffix = BigInt(m[2]);
      if (suffix > 0n && n > 0n) ranges.push([Number(suffix >= n ? 0n : n - suffix), size - 1]);
      continue;
    }
    const first = BigInt(m[1]);
    const last = m[2] === '' ? null : BigInt(m[2]);
    if (last !== null && last < first) return null;
    if (first < n) ranges.push([Number(first), Number(last === null || last >= n ? n - 1n : last)]);
  }
  return specs ? ranges : null;
}

/**
 * The status for a request Node's parser rejected ('clientError'), as RFC 9110 / 9112 name it.
 * `err.rawPacket` is the chunk the parser failed in; when it does not hold the whole request line
 * the answer falls back to 400.
 */
export function clientErrorStatus(err) {
  switch (err?.code) {
    case 'HPE_HEADER_OVERFLOW': return 431;
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW': return 413;
    case 'ERR_HTTP_REQUEST_TIMEOUT': return 408;
    case 'HPE_INVALID_METHOD':
      // a well-formed request line with a method nobody implements here: 501 (RFC 9110 9.1)
      return REQUEST_LINE.test(String(err.rawPacket ?? '')) ? 501 : 400;
    case 'HPE_INVALID_VERSION': {
      // HTTP/2.0 etc. in an HTTP/1 request line: 505 (RFC 9110 15.6.6); HTTP/1.x, bare LF: 400
      const m = REQUEST_LINE.exec(String(err.rawPacket ?? ''));
      return m && m[2] !== '1' ? 505 : 400;
    }
    default: return 400;
  }
}

/** A whole HTTP/1.1 response written straight to a socket (no ServerResponse exists there). */
function rawResponse(status, extra = {}) {
  const body = `${STATUS_CODES[status] ?? 'Error'}\n`;
  const headers = {
    ...SECURITY_HEADERS,
    ...extra,
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    Connection: 'close',
  };
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}`);
  return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n${lines.join('\r\n')}\r\n\r\n${body}`;
}

/** A short text answer on a ServerResponse that has the security headers already. */
function answer(res, status, { headers = {}, close = false } = {}) {
  const body = `${STATUS_CODES[status] ?? 'Error'}\n`;
  res.statusCode = status;
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  // A request we refused may still be sending a body; closing saves reading it.
  if (close) res.setHeader('Connection', 'close');
  res.end(body);
}

/** The path of a request-target (origin-form or absolute-form, RFC 9112 3.2), or null. */
function targetPath(target) {
  let url;
  try {
    if (target.startsWith('/')) url = new URL(`http://localhost${target}`);  // never `//host` as an authority
    else if (/^https?:\/\//i.test(target)) url = new URL(target);
    else return null;
  } catch {
    return null;
  }
  return url.pathname;
}

/**
 * The demo's files: GET and HEAD on / (demo/), /web/ (web/) and /models/ (models/). The method, version and Host
 * checks come first (startServer applies them before calling this).
 */
export function serveStatic(req, res) {
  if (req.url.length > MAX_TARGET_LENGTH) return answer(res, 414, { close: true });
  const path = targetPath(req.url);
  if (path === null) return answer(res, 400, { close: true });
  const route = ROUTES.find((r) => path.startsWith(r.prefix));
  // Range is decided once the file's size is known (send's 'file' event comes before it reads the
  // header): on GET only, never with If-Range (RFC 9110 14.2, 13.1.5).
  const asked = req.method === 'GET' && req.headers['if-range'] === undefined ? req.headers.range : undefined;
  delete req.headers.range;
  send(req, path.slice(route.prefix.length - 1), {
    root: route.dir,
    index: ['index.html'],
    dotfiles: 'ignore',
    etag: true,
    lastModified: true,
    cacheControl: false,
  })
    .on('file', (_, stat) => {
      const ranges = asked === undefined ? null : byteRanges(asked, stat.size);
      // send's range-parser then reads a clean header: explicit positions, or `bytes=<size>-`,
      // which it answers with 416 and `Content-Range: bytes */<size>`.
      if (ranges) req.headers.range = ranges.length ? `bytes=${ranges.map(([a, b]) => `${a}-${b}`).join(',')}` : `bytes=${stat.size}-`;
    })
    .on('headers', (r) => r.setHeader('Cache-Control', 'no-cache'))  // a dev server: always revalidate
    .on('directory', () => answer(res, 404))
    .on('error', (err) => {
      if (res.headersSent) {
        res.destroy(err);
        return;
      }
      const status = Number.isInteger(err.status) && err.status >= 400 && err.status < 600 ? err.status : 500;
      answer(res, status, { headers: err.headers ?? {} });
    })
    .pipe(res);
}

function checkRequest(req) {
  if (req.httpVersionMajor !== 1) return { status: 505 };
  const hosts = req.rawHeaders.filter((_, i) => i % 2 === 0 && req.rawHeaders[i].toLowerCase() === 'host').length;
  // RFC 9112 3.2: HTTP/1.1 needs exactly one Host; more than one, or an invalid one, is a 400 in any version
  if (hosts > 1 || (hosts === 0 && req.httpVersionMinor >= 1) || !HOST.test(req.headers.host ?? '')) return { status: 400 };
  if (req.method !== 'GET' && req.method !== 'HEAD') return { status: 405, headers: { Allow: ALLOW } };
  return null;
}

/**
 * Starts the demo server. `handle(req, res)` serves a request that passed the method, version and
 * Host checks (default: the demo's files); it may throw or return a rejecting promise: the client
 * gets a 500 and `onError(error, req)` hears of it. Resolves to the listening http.Server.
 */
export function startServer({
  port = 8080,
  host = '127.0.0.1',
  handle = serveStatic,
  onError = (error, req) => console.error(`serve-demo: ${req ? `${req.method} ${req.url}: ` : ''}${error?.stack ?? error}`),
} = {}) {
  const unfinished = new WeakMap();  // socket -> responses on it not yet finished (pipelining queues them)
  const prepare = (req, res) => {
    const socket = req.socket;
    unfinished.set(socket, (unfinished.get(socket) ?? 0) + 1);
    res.once('close', () => unfinished.set(socket, unfinished.get(socket) - 1));
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
  };
  const fail = (req, res, error) => {
    try {
      onError(error, req);
    } catch { /* a failing logger must not take the answer with it */ }
    if (res.writableEnded) return;
    if (res.headersSent) res.destroy();
    else answer(res, 500, { close: true });
  };
  const onRequest = (req, res) => {
    prepare(req, res);
    try {
      const refused = checkRequest(req);
      if (refused) return answer(res, refused.status, { headers: refused.headers, close: true });
      const pending = handle(req, res);
      if (pending && typeof pending.then === 'function') pending.then(null, (error) => fail(req, res, error));
    } catch (error) {
      fail(req, res, error);
    }
  };
  // requireHostHeader: false -> checkRequest answers a missing Host itself, with the headers above.
  const server = createServer({ requireHostHeader: false }, onRequest);
  // Expect: 100-continue: no request body is ever read, so the final answer comes at once.
  server.on('checkContinue', onRequest);
  server.on('checkExpectation', (req, res) => {
    prepare(req, res);
    answer(res, 417, { close: true });
  });
  server.on('connect', (req, socket) => {
    socket.on('error', () => {});
    socket.end(rawResponse(405, { Allow: ALLOW }), () => socket.destroy());
  });
  server.on('clientError', (err, socket) => {
    // As Node's own handler: write only where no other response is under way on this socket (a
    // pipelined request's answer may be half sent); otherwise the connection is just closed.
    if (err.code !== 'ECONNRESET' && socket.writable && !unfinished.get(socket)) {
      socket.end(rawResponse(clientErrorStatus(err)), () => socket.destroy());
    } else socket.destroy();
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      // After listen, an 'error' (EMFILE on accept, ...) must not end the process.
      server.on('error', (error) => onError(error, null));
      resolve(server);
    });
  });
}

/** PORT from the environment: an integer 0-65535 (0: any free port), default 8080. */
export function portFromEnv(value) {
  if (value === undefined || value === '') return 8080;
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) return null;
  return Number(value);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const port = portFromEnv(process.env.PORT);
  if (port === null) {
    console.error(`PORT must be an integer from 0 to 65535 (0: any free port), got '${process.env.PORT}'`);
    process.exit(1);
  }
  const server = await startServer({ port }).catch((e) => {
    if (e.code === 'EADDRINUSE') {
      console.error(`port ${e.port} is busy: PORT=8081 npm start`);
      process.exit(1);
    }
    throw e;
  });
  console.log(`sensorformer demo: http://localhost:${server.address().port}/  (simulated wearable by default; Ctrl-C to stop)`);
}
