#!/usr/bin/env node
// `npm start`: serves the demo on localhost with a strict Content-Security-Policy.
//   /        -> demo/
//   /web/    -> web/ (the package: src/, dist/ with the .wasm)
// sirv serves the files (correct MIME types, application/wasm included); this file only routes and
// sets the security headers. Web Bluetooth needs a secure context: http://localhost is one.
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import sirv from 'sirv';

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

const root = fileURLToPath(new URL('..', import.meta.url));
const demo = sirv(`${root}demo`, { dev: true, etag: true });
const web = sirv(`${root}web`, { dev: true, etag: true });

export function startServer({ port = Number(process.env.PORT ?? 8080), host = '127.0.0.1' } = {}) {
  const server = createServer((req, res) => {
    res.setHeader('Content-Security-Policy', CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
    const notFound = () => {
      res.statusCode = 404;
      res.end('not found');
    };
    if (req.url.startsWith('/web/')) {
      req.url = req.url.slice(4);
      web(req, res, notFound);
    } else demo(req, res, notFound);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const server = await startServer().catch((e) => {
    if (e.code === 'EADDRINUSE') {
      console.error(`port ${e.port} is busy: PORT=8081 npm start`);
      process.exit(1);
    }
    throw e;
  });
  const { port } = server.address();
  console.log(`sensorformer demo: http://localhost:${port}/  (simulated wearable by default; Ctrl-C to stop)`);
}
