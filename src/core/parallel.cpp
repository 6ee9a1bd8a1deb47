#include "core/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#ifdef SF_THREADS
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>
#endif

namespace sf::parallel {

#ifdef SF_THREADS
namespace {

// Spin iterations (an atomic load each) before a waiting thread sleeps on the condition variable.
// A forward's steps follow each other within microseconds, so a helper that has just finished
// one usually sees the next while still spinning (no futex wake-up, which costs tens of
// microseconds between browser Workers); between forwards the helpers sleep.
constexpr int kSpin = 1 << 14;

thread_local bool in_task = false;

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
    const int helpers = std::min(static_cast<int>(helpers_.size()), tasks - 1);
    {
      std::lock_guard<std::mutex> lock(m_);
      fn_ = &fn;
      tasks_ = tasks;
      next_.store(0, std::memory_order_relaxed);
      remaining_.store(helpers, std::memory_order_relaxed);
      helpers_on_ = helpers;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    work(0);
    for (int i = 0; i < kSpin && remaining_.load(std::memory_order_acquire) != 0; ++i) {
    }
    if (remaining_.load(std::memory_order_acquire) != 0) {
      std::unique_lock<std::mutex> lock(m_);
      done_.wait(lock, [this] { return remaining_.load(std::memory_order_acquire) == 0; });
    }
    fn_ = nullptr;
    return true;
  }

 private:
  void work(int slot) {
    in_task = true;
    for (int t; (t = next_.fetch_add(1, std::memory_order_relaxed)) < tasks_;) (*fn_)(t, slot);
    in_task = false;
  }

  void loop(int slot, std::uint64_t seen) {
    for (;;) {
      for (int i = 0; i < kSpin && generation_.load(std::memory_order_acquire) == seen; ++i) {
      }
      bool join;
      {
        std::unique_lock<std::mutex> lock(m_);
        wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        seen = generation_.load(std::memory_order_acquire);
        if (stop_) return;
        join = slot <= helpers_on_;
      }
      if (!join) continue;
      work(slot);
      if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(m_);
        done_.notify_all();
      }
    }
  }

  std::vector<std::thread> helpers_;
  std::mutex busy_;  // held by the thread whose run() owns the pool
  std::mutex m_;
  std::condition_variable wake_, done_;
  std::atomic<std::uint64_t> generation_{0};
  bool stop_ = false;
  // The step being run: written under m_ before generation_ moves, read by helpers after it did.
  const TaskRef* fn_ = nullptr;
  int tasks_ = 0;
  int helpers_on_ = 0;  // helpers with slot <= helpers_on_ take part
  std::atomic<int> next_{0};
  std::atomic<int> remaining_{0};
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

#else  // no threads in this build (the rest is inline in parallel.hpp)

Status set_threads(int n) {
  if (n == 1) return Status::Ok();
  return {ErrorCode::kInvalidArgument,
          "this build has no threads (the single-thread WebAssembly build); threads must be 1, got " + std::to_string(n)};
}

#endif

#ifdef SF_THREADS
int split(double work, double grain) {
  const int n = threads();
  if (n == 1 || !(work > grain)) return 1;
  const double want = std::ceil(work / grain);
  return want >= n ? n : static_cast<int>(want);
}

#endif

}  // namespace sf::parallel
