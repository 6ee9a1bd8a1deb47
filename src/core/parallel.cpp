#include "core/parallel.hpp"

#include <string>

#ifdef SF_THREADS
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>
#ifdef __EMSCRIPTEN__
#include <emscripten/threading.h>

#include <climits>
#endif
#endif

namespace sf::parallel {

#ifdef SF_THREADS
namespace {

// How long a waiting thread spins (atomic loads, the clock read every 1024 of them) before it
// sleeps on the condition variable. A forward's steps follow each other within tens of
// microseconds (the layer norm between two products of a 1024-token window takes ~20 us), so a
// helper that has just finished one sees the next while still spinning. Waking a sleeping one
// costs far more than the futex call: in a 2-vCPU VM a forward of 256 tokens takes 2.0-2.8 ms on
// 2 threads back to back but 3.8-4.6 ms after a 20 ms pause, the idle vCPU having to be woken
// (node bench/thread_wake.mjs). Between forwards the helpers sleep after this long.
constexpr std::chrono::microseconds kSpinTime{500};

// A spinning thread may be spinning on the very CPU the thread it waits for needs. A Linux that
// packs wake-ups onto busy vCPUs, as the 2-vCPU Firecracker VM of BENCHMARKS.md does ("Where the
// helper wakes"; `build/native/sensorformer_thread_placement`: after a 20 ms pause the helper ran on
// its caller's vCPU in 20-24 of 30 rounds, after 2 ms in none), or any machine with more busy
// threads than cores, does that: the helper, spinning for its next step, took half the CPU from its
// caller, and the caller spun while the helper held a claimed task it could not run. 40 steps after
// a pause then took 1.6-1.7x as long as on one thread. So after kEagerSpin of plain spinning a
// waiting thread gives its CPU away between checks (Nap::relax), and such a round takes about what
// one thread does (1.0x). Steps of a forward, and forwards run back to back, follow each other
// within kEagerSpin and never relax: with 100 us the helpers relaxed between two 64-token forwards
// and the next started late (3-5 % slower back to back; with 300 us within the runs' noise, -2 to
// +1 %: `node bench/compare_builds.mjs --threads 2 --tokens 64`).
constexpr std::chrono::microseconds kEagerSpin{300};

// Natively relax() is sched_yield, which returns at once when nothing else is runnable.
// WebAssembly has no yield: relax() is a futex wait of 10 us (Linux adds its timer slack, 50 us by
// default) on a word that rouse() moves, and wakes, when what a thread waits for happens (a
// step posted, a step's last task finished), so a napping thread starts on a step about as soon as
// a spinning one would.
class Nap {
 public:
  void relax() {
#ifdef __EMSCRIPTEN__
    nappers_.fetch_add(1);
    emscripten_futex_wait(&word_, word_.load(), 0.01);
    nappers_.fetch_sub(1);
#else
    std::this_thread::yield();
#endif
  }
  void rouse() {
#ifdef __EMSCRIPTEN__
    word_.fetch_add(1);  // a relax() that read the word before this returns at once or is woken
    if (nappers_.load() > 0) emscripten_futex_wake(&word_, INT_MAX);
#endif
  }

 private:
#ifdef __EMSCRIPTEN__
  std::atomic<std::uint32_t> word_{0};
  std::atomic<int> nappers_{0};
#endif
};

// Spins until done() or kSpinTime has passed (relaxing after kEagerSpin); true if done() became true.
template <class Done>
bool spin(Nap& nap, Done done) {
  const auto start = std::chrono::steady_clock::now();
  const auto eager = start + kEagerSpin, until = start + kSpinTime;
  for (;;) {
    for (int i = 0; i < 1024; ++i)
      if (done()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) return done();
    if (now >= eager) nap.relax();
  }
}

thread_local bool in_task = false;

// A step ("job") is published under m_ (its function, task count and number) and announced by
// moving generation_; its tasks are claimed from next_, which holds the job's number in its high
// 32 bits and the next task index in its low 32: a thread that wakes late, after its job is over
// and another posted, cannot claim a task of the new job for the old one (the number differs).
// The caller waits for the job's tasks to be finished, not for every helper to check in: a helper
// still waking up when the others have done all the tasks costs nothing (on a VM, waking an idle
// vCPU can take a millisecond).
class Pool {
 public:
  ~Pool() { resize(1); }

  int size() const { return static_cast<int>(helpers_.size()) + 1; }

  void resize(int n) {
    if (!helpers_.empty()) {
      {
        std::lock_guard<std::mutex> lock(m_);
        stop_ = true;
        generation_.fetch_add(1, std::memory_order_release);
      }
      wake_.notify_all();
      for (auto& t : helpers_) t.join();
      helpers_.clear();
      stop_ = false;
    }
    // A helper starts from the generation of now: a step posted before it is scheduled is still
    // one it has not seen.
    const std::uint64_t now = generation_.load(std::memory_order_acquire);
    for (int slot = 1; slot < n; ++slot) helpers_.emplace_back([this, slot, now] { loop(slot, now); });
  }

  // False when another thread is using the pool (the caller then runs the tasks alone).
  bool try_run(int tasks, TaskRef fn) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    Job job;
    {
      std::lock_guard<std::mutex> lock(m_);
      job = job_ = Job{&fn, tasks, job_.number + 1};
      finished_.store(0, std::memory_order_relaxed);
      next_.store(static_cast<std::uint64_t>(job.number) << 32, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    nap_.rouse();
    work(job, 0);
    const auto done = [&] { return finished_.load(std::memory_order_acquire) == tasks; };
    if (!spin(nap_, done)) {
      std::unique_lock<std::mutex> lock(m_);
      done_.wait(lock, done);
    }
    return true;
  }

 private:
  struct Job {
    const TaskRef* fn = nullptr;
    int tasks = 0;
    std::uint32_t number = 0;
  };

  // Claims and runs tasks of `job` until none is left (or a newer job replaced it).
  void work(const Job& job, int slot) {
    in_task = true;
    std::uint64_t v = next_.load(std::memory_order_acquire);
    for (;;) {
      if (static_cast<std::uint32_t>(v >> 32) != job.number || static_cast<int>(v & 0xffffffffu) >= job.tasks) break;
      if (!next_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
      (*job.fn)(static_cast<int>(v & 0xffffffffu), slot);
      if (finished_.fetch_add(1, std::memory_order_acq_rel) + 1 == job.tasks) {
        nap_.rouse();
        std::lock_guard<std::mutex> lock(m_);
        done_.notify_all();
      }
      v = next_.load(std::memory_order_acquire);
    }
    in_task = false;
  }

  void loop(int slot, std::uint64_t seen) {
    for (;;) {
      spin(nap_, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      Job job;
      {
        std::unique_lock<std::mutex> lock(m_);
        wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        seen = generation_.load(std::memory_order_acquire);
        if (stop_) return;
        job = job_;  // a consistent copy: the caller writes it under m_
      }
      work(job, slot);
    }
  }

  std::vector<std::thread> helpers_;
  std::mutex busy_;  // held by the thread whose run() owns the pool
  std::mutex m_;
  std::condition_variable wake_, done_;
  std::atomic<std::uint64_t> generation_{0};
  bool stop_ = false;
  Job job_;                               // the latest job, written under m_
  std::atomic<std::uint64_t> next_{0};    // (job number << 32) | next task index
  std::atomic<int> finished_{0};          // tasks of the current job finished
  Nap nap_;                               // what a spinning thread relaxes on
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

bool available() { return true; }

Status set_threads(int n) {
  if (n < 1 || n > kMaxThreads)
    return {ErrorCode::kInvalidArgument, "threads must be 1.." + std::to_string(kMaxThreads) + ", got " + std::to_string(n)};
  if (in_task) return {ErrorCode::kInvalidArgument, "set_threads called from inside a parallel step"};
  if (n != pool().size()) pool().resize(n);
  return Status::Ok();
}

int threads() { return pool().size(); }

void run(int tasks, TaskRef fn) {
  if (tasks <= 0) return;
  if (tasks == 1 || in_task || pool().size() == 1 || !pool().try_run(tasks, fn)) {
    for (int t = 0; t < tasks; ++t) fn(t, 0);
  }
}

int split(double work, double grain) {
  const int n = threads();
  if (n == 1 || !(work > grain)) return 1;
  const double want = std::ceil(work / grain), most = static_cast<double>(n) * kTasksPerThread;
  return want >= most ? static_cast<int>(most) : static_cast<int>(want);
}

#else  // no threads in this build (the rest is inline in parallel.hpp)

Status set_threads(int n) {
  if (n == 1) return Status::Ok();
  return {ErrorCode::kInvalidArgument,
          "this build has no threads (the single-thread WebAssembly build); threads must be 1, got " + std::to_string(n)};
}

#endif

}  // namespace sf::parallel
