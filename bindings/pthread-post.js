// Appended to the threaded module's glue (--post-js; it runs inside the factory, where
// Emscripten's PThread object is in scope). The package's loader reads the pool's Workers through
// this: under Node it unrefs them, so an idle pool never keeps a process alive (the CLI and the
// tests exit on their own); a forward in progress is synchronous, so nothing is cut short.
Module['sfWorkers'] = function () {
  return PThread.unusedWorkers.concat(PThread.runningWorkers);
};
