// Where the operating system runs the pool's helper thread when a step wakes it after a pause
// (core/parallel.cpp; docs/performance.md "Threads"), natively on Linux, where sched_getcpu() can
// see it (a WebAssembly thread cannot). Each round sleeps --pause ms (the helper goes to sleep after
// its 0.5 ms spin), then runs 40 parallel steps of 8 tasks of scalar work (~16 us each, 5 ms on one
// thread), and records on which CPU the caller and the helper ran their tasks. The same 40 steps on
// one thread are timed between rounds. A helper woken onto the caller's CPU has to share it, and
// the round takes as long as one thread or longer; on a machine that spreads the two over its CPUs
// every round takes half.
//
//   bash tools/build.sh && build/native/sensorformer_thread_placement [--rounds 20] [--pause 20]
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core/parallel.hpp"

namespace {

volatile float g_sink;

// ~16 us of dependent scalar multiply-adds (no vector unit: its warm-up after idle would time
// something else than placement).
void work() {
  float a = 1.0f;
  for (int i = 0; i < 10000; ++i) a = a * 1.0000001f + 1e-7f;
  g_sink = a;
}

struct Round {
  double ms;
  int helper_tasks, helper_on_caller_cpu;
};

constexpr int kSteps = 40, kTasks = 8;

Round run_steps() {
  std::atomic<int> helper_tasks{0}, shared{0};
  const auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < kSteps; ++s) {
    const int caller_cpu = sched_getcpu();
    auto task = [&](int, int slot) {
      if (slot != 0) {
        helper_tasks++;
        if (sched_getcpu() == caller_cpu) shared++;
      }
      work();
    };
    sf::parallel::run(kTasks, task);
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return {ms, helper_tasks.load(), shared.load()};
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 20, pause_ms = 20;
  for (int i = 1; i < argc; i++) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--pause") == 0 && i + 1 < argc) {
      pause_ms = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: sensorformer_thread_placement [--rounds R] [--pause MS]\n");
      return 2;
    }
  }
  if (rounds < 1 || rounds > 10000 || pause_ms < 0 || pause_ms > 10000) {
    std::fprintf(stderr, "--rounds must be 1..10000 and --pause 0..10000\n");
    return 2;
  }
  if (!sf::parallel::set_threads(2).ok()) {
    std::fprintf(stderr, "this build has no threads\n");
    return 1;
  }
  run_steps();
  std::vector<double> one, spread, shared;
  int shared_rounds = 0;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kSteps * kTasks; ++i) work();  // the same work on the calling thread alone
    one.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    const Round x = run_steps();
    // "Shared": the helper ran at least a quarter of its tasks on the CPU its caller was on.
    const bool on_caller = x.helper_tasks == 0 || 4 * x.helper_on_caller_cpu >= x.helper_tasks;
    (on_caller ? shared : spread).push_back(x.ms);
    shared_rounds += on_caller;
    std::printf("{\"round\": %d, \"ms\": %.3f, \"helper_tasks\": %d, \"on_caller_cpu\": %d}\n", r, x.ms,
                x.helper_tasks, x.helper_on_caller_cpu);
  }
  std::printf("%d steps of %d tasks after a %d ms pause, %d rounds: 1 thread %.2f ms; 2 threads %.2f ms in the %zu "
              "rounds the helper ran on its own CPU, %.2f ms in the %d it shared the caller's (or ran none)\n",
              kSteps, kTasks, pause_ms, rounds, median(one), median(spread), spread.size(), median(shared),
              shared_rounds);
  return 0;
}
