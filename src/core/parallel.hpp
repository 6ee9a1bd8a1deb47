// Threads inside one forward: a fixed pool of helper threads that the calling thread joins for
// each parallel step (matrix products by row blocks, attention by head and query block).
//
// Determinism: callers split work only at the boundaries their kernels already block on (the
// matrix product's 16-row blocks, attention's 64-query blocks, whole heads), so every output
// element is computed by the same instructions in the same order whatever the thread count:
// results are bit-identical to one thread (tests/cpp/test_parallel.cpp holds the model to that).
//
// Builds: with SF_THREADS (native builds, and the WebAssembly build linked with Emscripten
// pthreads) the helpers are std::threads; without it (the single-thread WebAssembly build)
// set_threads accepts only 1 and run() is a plain loop. Emscripten hands each std::thread a
// Worker from the pool it started at load (-sPTHREAD_POOL_SIZE), so set_threads needs no event
// loop turn.
//
// One pool per process (per WebAssembly instance). run() from inside a task, or from a second
// thread while the pool is busy, runs its tasks on the calling thread alone: nested and concurrent
// calls are correct, only not spread.
#pragma once

#include "core/status.hpp"

namespace sf::parallel {

// Upper bound of set_threads (the JS option numThreads is capped lower, at 4 by default).
constexpr int kMaxThreads = 16;

// A non-owning callable: run() calls fn(task, slot) for every task in [0, tasks), each exactly
// once, spread over the pool; slot in [0, threads()) names the thread running it (for per-thread
// scratch), and no two tasks run on one slot at the same time. Returns when all have finished.
// Tasks must write disjoint memory.
class TaskRef {
 public:
  template <class F>
  TaskRef(F& f) : obj_(&f), call_([](void* o, int task, int slot) { (*static_cast<F*>(o))(task, slot); }) {}  // NOLINT
  void operator()(int task, int slot) const { call_(obj_, task, slot); }

 private:
  void* obj_;
  void (*call_)(void*, int, int);
};

// Task t's share of `count` units split into `tasks` contiguous runs: units [begin, end), in order,
// sizes differing by at most one. Every split in the core cuts its units (row blocks, query
// blocks, groups) this way.
struct Part {
  int begin, end;
};
inline Part part(int count, int t, int tasks) {
  return {static_cast<int>(static_cast<long long>(count) * t / tasks),
          static_cast<int>(static_cast<long long>(count) * (t + 1) / tasks)};
}

// The grain of the forward's steps, in multiply-adds: a step (a matrix product, an attention) is
// split into parts of at least this much work, ~13 us of one thread's work in WebAssembly
// (~5 GMAC/s). A spinning helper picks a part up in a microsecond or two; a sleeping one takes
// tens of microseconds (on a VM up to a millisecond), and on a machine with more threads than
// free cores a helper may not run for milliseconds. That costs little: the caller takes parts
// itself and waits only for parts a helper has claimed, never for a helper to start. So even the
// small windows of streaming split (N = 64 tokens at d 64: every projection into 4 blocks of 16
// rows, attention by head): 2^16 against the 2^20 (~0.2 ms) used until 2026-12-03, which left
// them on one thread: 1.08-1.52x faster at 64 tokens on 2 threads, the same from 256 up
// (BENCHMARKS.md, "The step grain and the bench's pause").
constexpr double kGrain = 1 << 16;

// The grain above which the groups of a block (the channel and factorized layouts' channel
// attention, small time groups) run one after another with their steps split, rather than
// spread over the threads whole (model.cpp, run_block): a group whose largest product is at most
// this is handed out whole. Groups keep the larger grain: at the step grain, the demo model's
// groups of 1-50 tokens would run one after another with their steps cut into parts of a few
// microseconds, 16-20 % slower on 2 threads (BENCHMARKS.md, "The step grain and the bench's pause").
constexpr double kGroupGrain = 1 << 20;

#ifdef SF_THREADS

// True when this build can start helper threads (SF_THREADS).
bool available();

// Sets how many threads (the caller included) share a parallel step: 1..kMaxThreads, and 1 in a
// build without threads (else kInvalidArgument). Starts or stops helpers; call it between
// forwards, never from inside run().
Status set_threads(int n);
int threads();

void run(int tasks, TaskRef fn);

// Tasks worth spreading: ceil(work / grain), at most kTasksPerThread per thread, 1 when work <=
// grain. Several tasks per thread, taken in turn by whichever thread is free, even out a helper
// that starts late (woken from sleep, or descheduled on a busy machine): with one task each, the
// caller would wait for the late one's whole share.
constexpr int kTasksPerThread = 4;
int split(double work, double grain);

#else  // the single-thread build: inline, so every split folds to one task at compile time

inline bool available() { return false; }
Status set_threads(int n);  // 1 only
inline int threads() { return 1; }
template <class F>
inline void run(int tasks, F&& fn) {
  for (int t = 0; t < tasks; ++t) fn(t, 0);
}
inline int split(double, double) { return 1; }

#endif

}  // namespace sf::parallel
