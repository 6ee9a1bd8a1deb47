// Where the package runs: Node (files by path, worker_threads) or a browser / Worker (fetch, URLs).
export const isNode = typeof process === 'object' && typeof process.versions?.node === 'string';
