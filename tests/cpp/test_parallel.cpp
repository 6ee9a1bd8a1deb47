// Threads inside a forward (core/parallel.hpp): the pool runs every task exactly once, nested and
// concurrent calls fall back to the calling thread, and the parallel steps (matrix product by row
// blocks, attention by head and query block, feed-forward by row blocks) give results bit-identical
// to one thread. Tolerance: none (EXPECT_EQ on the float bits); the splits are built to keep every
// output element's instructions and their order, so any difference is a bug, not rounding.
//
// Built into sensorformer_tests natively (std::thread) and into sensorformer_tests_mt as WebAssembly
// with Emscripten pthreads, run in Node; the single-thread WebAssembly build's sensorformer_tests
// checks only that it runs tasks inline and refuses threads.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "attend/multihead_attention.hpp"
#include "core/parallel.hpp"
#include "kernels/matmul.hpp"
#include "model/model.hpp"
#include "model_files.hpp"
#include "testing.hpp"

namespace sf {
namespace {

using testing::random_floats;

#ifndef SF_THREADS

// The single-thread WebAssembly build (sensorformer_tests in build/wasm): no helpers to start.
TEST(Parallel, SingleThreadBuildRunsTasksInlineAndRefusesThreads) {
  EXPECT_FALSE(parallel::available());
  EXPECT_EQ(parallel::set_threads(2).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(parallel::set_threads(1).ok());
  EXPECT_EQ(parallel::threads(), 1);
  EXPECT_EQ(parallel::split(1e12, 1), 1);
  std::vector<int> seen(9);
  parallel::run(9, [&](int t, int slot) { seen[t] += 1 + slot; });
  EXPECT_EQ(seen, std::vector<int>(9, 1));
}

#else

// Restores one thread when a test ends, whatever it did.
struct Threads {
  explicit Threads(int n) { EXPECT_TRUE(parallel::set_threads(n).ok()); }
  ~Threads() { EXPECT_TRUE(parallel::set_threads(1).ok()); }
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  // memcmp's pointers must not be null, even for 0 bytes (an empty vector's data() may be).
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

TEST(Parallel, RunsEveryTaskOnceOnValidSlots) {
  ASSERT_TRUE(parallel::available());
  for (int n : {1, 2, 3, 4}) {
    Threads threads(n);
    ASSERT_EQ(parallel::threads(), n);
    for (int tasks : {0, 1, 2, 3, 7, 64, 1000}) {
      std::vector<std::atomic<int>> seen(tasks);
      std::vector<std::atomic<int>> busy(n);
      std::atomic<bool> overlap{false}, bad_slot{false};
      auto fn = [&](int t, int slot) {
        if (slot < 0 || slot >= n) { bad_slot = true; return; }
        if (busy[slot].fetch_add(1) != 0) overlap = true;  // two tasks on one slot at once
        seen[t].fetch_add(1);
        busy[slot].fetch_sub(1);
      };
      parallel::run(tasks, fn);
      EXPECT_FALSE(bad_slot);
      EXPECT_FALSE(overlap);
      for (int t = 0; t < tasks; ++t) EXPECT_EQ(seen[t].load(), 1) << "threads " << n << " tasks " << tasks << " task " << t;
    }
  }
}

TEST(Parallel, NestedAndConcurrentCallsRunOnTheCaller) {
  Threads threads(3);
  std::atomic<int> inner{0};
  std::atomic<bool> inner_off_slot{false};
  auto outer = [&](int, int slot) {
    auto in = [&](int, int s) { if (s != 0) inner_off_slot = true; inner.fetch_add(1); };
    parallel::run(5, in);
    (void)slot;
  };
  parallel::run(6, outer);
  EXPECT_EQ(inner.load(), 30);
  EXPECT_FALSE(inner_off_slot) << "a nested run must stay on its thread (slot 0)";
  // Two threads calling run() at once: both complete every task.
  std::atomic<int> a{0}, b{0};
  auto fa = [&](int, int) { a.fetch_add(1); };
  auto fb = [&](int, int) { b.fetch_add(1); };
  std::thread other([&] { for (int i = 0; i < 200; ++i) parallel::run(9, fb); });
  for (int i = 0; i < 200; ++i) parallel::run(9, fa);
  other.join();
  EXPECT_EQ(a.load(), 1800);
  EXPECT_EQ(b.load(), 1800);
}

// Waits longer than the pool's plain spin (kEagerSpin, 300 us) take the relaxing path
// (core/parallel.cpp: sched_yield natively, a futex nap that the next step or the last finished
// task ends in WebAssembly): the caller waiting ~1 ms for a helper's task, helpers waiting 0.4 ms
// between steps (relaxing, not yet asleep) and 2 ms (asleep). Every step must still run each task
// exactly once, on a valid slot, and return only when all have finished.
TEST(Parallel, WaitsPastTheEagerSpinLoseNoTask) {
  using clock = std::chrono::steady_clock;
  const auto busy_for = [](std::chrono::microseconds d) {
    const auto until = clock::now() + d;
    while (clock::now() < until) {
    }
  };
  for (int n : {2, 3}) {
    Threads threads(n);
    for (const auto gap : {std::chrono::microseconds(0), std::chrono::microseconds(400), std::chrono::microseconds(2000)}) {
      for (int step = 0; step < 6; ++step) {
        const int tasks = 2 * n;
        std::vector<std::atomic<int>> seen(tasks);
        std::atomic<int> finished{0};
        std::atomic<bool> bad_slot{false};
        auto fn = [&](int t, int slot) {
          if (slot < 0 || slot >= n) bad_slot = true;
          busy_for(std::chrono::microseconds(t % 2 ? 1000 : 100));  // uneven: someone waits ~1 ms
          seen[t].fetch_add(1);
          finished.fetch_add(1);
        };
        parallel::run(tasks, fn);
        EXPECT_EQ(finished.load(), tasks) << "run() returned before every task finished";
        EXPECT_FALSE(bad_slot);
        for (int t = 0; t < tasks; ++t) EXPECT_EQ(seen[t].load(), 1) << "threads " << n << " task " << t;
        std::this_thread::sleep_for(gap);
      }
    }
  }
}

TEST(Parallel, SetThreadsChecksItsArgument) {
  EXPECT_EQ(parallel::set_threads(0).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(parallel::set_threads(parallel::kMaxThreads + 1).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(parallel::threads(), 1);
  // From inside a step: refused, the pool unchanged.
  Threads threads(2);
  std::atomic<int> refused{0};
  auto fn = [&](int, int) { refused += parallel::set_threads(4).code() == ErrorCode::kInvalidArgument; };
  parallel::run(2, fn);
  EXPECT_EQ(refused.load(), 2);
  EXPECT_EQ(parallel::threads(), 2);
}

TEST(Parallel, SplitKeepsSmallWorkOnOneThread) {
  Threads threads(4);
  EXPECT_EQ(parallel::split(100, 1000), 1);
  EXPECT_EQ(parallel::split(2500, 1000), 3);
  EXPECT_EQ(parallel::split(1e9, 1000), 4 * parallel::kTasksPerThread);
}

// The grains' design points (core/parallel.hpp): a 64-token window's projections at d 64 split on
// 2 threads (the streaming regime uses both), while a demo-sized group (50 tokens at d 32, its
// largest product) is still handed out whole rather than cut into parts of a few microseconds.
TEST(Parallel, GrainsSplitSmallWindowsButKeepSmallGroupsWhole) {
  Threads threads(2);
  EXPECT_GE(parallel::split(64.0 * (3 * 64) * 64, parallel::kGrain), 2);  // in_proj, 64 tokens
  EXPECT_GE(parallel::split(64.0 * 64 * 64, parallel::kGrain), 2);        // out_proj, 64 tokens
  EXPECT_LE(50.0 * 32 * (3 * 32), parallel::kGroupGrain);
  EXPECT_LT(parallel::kGrain, parallel::kGroupGrain);
}

TEST(Parallel, GemmPackedRowBlocksBitIdentical) {
  for (int M : {1, 17, 64, 333, 1024}) {
    const int N = 96, K = 80;
    const auto A = random_floats(static_cast<size_t>(M) * K, 1);
    const auto W = random_floats(static_cast<size_t>(N) * K, 2);
    const auto b = random_floats(N, 3);
    kernels::PackedWeights pw;
    kernels::pack_weights(W.data(), N, K, K, b.data(), &pw);
    std::vector<std::vector<float>> out;
    for (int n : {1, 2, 3, 4}) {
      Threads threads(n);
      std::vector<float> C = random_floats(static_cast<size_t>(M) * N, 4);  // accumulate onto it
      kernels::gemm_packed(M, A.data(), K, pw, 0.5f, kernels::Act::kGelu, true, C.data(), N);
      out.push_back(C);
    }
    for (size_t i = 1; i < out.size(); ++i) EXPECT_TRUE(same_bits(out[0], out[i])) << "M " << M << ", threads " << i + 1;
  }
}

TEST(Parallel, AttentionHeadsAndQueryBlocksBitIdentical) {
  const int E = 64, H = 4;
  const auto in_w = random_floats(3 * E * E, 5, -0.2f, 0.2f), in_b = random_floats(3 * E, 6);
  const auto out_w = random_floats(E * E, 7, -0.2f, 0.2f), out_b = random_floats(E, 8);
  kernels::PackedWeights in_p, out_p;
  kernels::pack_weights(in_w.data(), 3 * E, E, E, in_b.data(), &in_p);
  kernels::pack_weights(out_w.data(), E, E, E, out_b.data(), &out_p);
  MhaWeights w{E, H, in_w.data(), in_b.data(), out_w.data(), out_b.data(), &in_p, &out_p};
  for (int L : {70, 300}) {
    const auto x = random_floats(static_cast<size_t>(L) * E, 9);
    std::vector<std::uint8_t> pad(L);
    std::vector<int> start(L);
    for (int j = 0; j < L; ++j) pad[j] = j % 7 == 3;
    for (int i = 0; i < L; ++i) start[i] = i / 3;
    for (AttentionWeights maps : {AttentionWeights::kNone, AttentionWeights::kPerHead, AttentionWeights::kAveraged}) {
      for (int variant = 0; variant < 2; ++variant) {
        std::vector<std::vector<float>> outs, attns;
        for (int n : {1, 2, 3}) {
          Threads threads(n);
          MhaOptions o;
          o.key_padding_mask = pad.data();
          o.causal = variant == 1;
          o.key_start = variant == 1 ? start.data() : nullptr;
          o.weights = maps;
          MhaWorkspace ws;
          o.workspace = &ws;
          std::vector<float> out(static_cast<size_t>(L) * E);
          std::vector<float> attn(maps == AttentionWeights::kNone ? 0 : static_cast<size_t>(L) * L * (maps == AttentionWeights::kPerHead ? H : 1));
          ASSERT_TRUE(multihead_attention(w, x.data(), L, x.data(), L, o, out.data(), attn.empty() ? nullptr : attn.data()).ok());
          outs.push_back(out);
          attns.push_back(attn);
        }
        for (size_t i = 1; i < outs.size(); ++i) {
          EXPECT_TRUE(same_bits(outs[0], outs[i])) << "L " << L << " maps " << static_cast<int>(maps) << " variant " << variant << " threads " << i + 1;
          EXPECT_TRUE(same_bits(attns[0], attns[i])) << "weights: L " << L << " maps " << static_cast<int>(maps) << " threads " << i + 1;
        }
      }
    }
  }
}

// A whole forward of a model big enough that every step splits (d 64, 4 heads, ff 128; a window
// of ~600 tokens), in each layout, with attention maps: embeddings, pooled, head and maps equal to
// one thread's bit for bit. The channel and factorized layouts' channel attention (hundreds of
// groups of 1-2 tokens) spreads whole groups over the threads (model.cpp, run_block): their maps
// must also come back in group order with the same tokens.
TEST(Parallel, ModelForwardBitIdentical) {
  for (const char* layout : {"flattened", "time", "channel", "factorized"}) {
    nlohmann::json c = testing::small_config(layout, std::string(layout) == "time");
    c["d_model"] = 64;
    c["n_heads"] = 4;
    c["dim_feedforward"] = 128;
    Model m;
    ASSERT_TRUE(Model::load(testing::write_safetensors(testing::small_tensors(c), c.dump()), &m).ok()) << layout;
    Window win;
    StreamInput ecg;
    ecg.sensor = 0, ecg.modality = "ecg", ecg.placement = "chest", ecg.rate_hz = 130.0, ecg.start_time = 1764460800.0;
    ecg.samples = random_floats(4 * 520, 10);
    ecg.samples[37] = std::nanf("");  // a missing sample inside a patch
    StreamInput hr;
    hr.sensor = 1, hr.modality = "hr", hr.placement = "wrist", hr.rate_hz = 1.0, hr.start_time = 1764460801.0;
    hr.samples = random_floats(2 * 60, 11, 50.0f, 90.0f);
    win.streams = {ecg, hr};
    ForwardOptions o;
    o.attention_maps = true;
    std::vector<ForwardResult> r(3);
    for (int n = 1; n <= 3; ++n) {
      Threads threads(n);
      const Status s = m.forward(win, o, &r[n - 1]);
      ASSERT_TRUE(s.ok()) << layout << ": " << s.message();
    }
    for (int n = 2; n <= 3; ++n) {
      EXPECT_TRUE(same_bits(r[0].embeddings, r[n - 1].embeddings)) << layout << " threads " << n;
      EXPECT_TRUE(same_bits(r[0].pooled, r[n - 1].pooled)) << layout << " threads " << n;
      EXPECT_TRUE(same_bits(r[0].head, r[n - 1].head)) << layout << " threads " << n;
      ASSERT_EQ(r[0].attention.size(), r[n - 1].attention.size());
      for (size_t i = 0; i < r[0].attention.size(); ++i) {
        const AttentionMap &a = r[0].attention[i], &b = r[n - 1].attention[i];
        EXPECT_TRUE(same_bits(a.weights, b.weights)) << layout << " map " << i;
        EXPECT_TRUE(a.layer == b.layer && a.block == b.block && a.group == b.group && a.tokens == b.tokens) << layout << " map " << i;
      }
    }
    EXPECT_GT(r[0].tokens.count, 500) << "the window must be large enough for the steps to split";
  }
}

#endif  // SF_THREADS

}  // namespace
}  // namespace sf
