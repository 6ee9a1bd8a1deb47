// sensorformer_bench: the core's kernels timed on their own, so one source gives the WebAssembly /
// native SSE4.1 / native -march=native comparison (bench/native.mjs runs the three builds).
//
//   sensorformer_bench [--quick] [--rounds R]
//
// One JSON line per case on stdout: {"kernel": name, "gflops": median, "ms": median per call}.
// Cases run in R interleaved rounds (default 7; every case once per round, in order) after one
// warm-up round; bench/native.mjs asks for few rounds per run and alternates the three builds'
// runs instead, so a change in the shared machine's load hits every build alike;
// a sample repeats its call until it lasts >= kMinSampleMs so short kernels are not timer-bound.
// Inputs are seeded (std::mt19937 + a fixed uniform mapping), so every build times the same data.
// FLOPs: gemm 2MNK; attention_head 4 L S Dh (Q.K^T and P.V; softmax not counted); encoder layer
// as in bench/lib.mjs (8 N d^2 + 4 N^2 d + 4 N d ff). gelu and layer_norm report elements/ns
// (G elements/s) in the "gflops" field, their cost being a handful of ops per element.
//
// Against the hardware (issue 22): the first line is the core's clock, measured in this process
// ({"kernel": "clock", "ghz", "limit_gflops"}: see add_chain), and the GEMM and attention lines
// carry "limit_pct", their GFLOP/s as a percentage of the 128-bit limit, kFlopPerCycle128 x the
// clock: what WebAssembly SIMD128 could do at best on this core. So does the probe (probe_kloop),
// GEMM's inner loop alone: what the core gave 128-bit multiply-add code during this run.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "attend/encoder_layer.hpp"
#include "kernels/activation.hpp"
#include "kernels/attention.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/matmul.hpp"
#include "kernels/simd.hpp"

namespace {

constexpr double kMinSampleMs = 20.0;

std::vector<float> seeded(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::vector<float> v(n);
  // [-scale, scale): the raw 32-bit draws mapped by hand, identical on every standard library
  for (auto& x : v) x = scale * (static_cast<float>(gen() >> 8) * (2.0f / 16777216.0f) - 1.0f);
  return v;
}

struct Case {
  std::string name;
  double flops;  // per call
  std::function<void()> run;
  int calls = 1;  // per sample, fixed after warm-up
  std::vector<double> ms = {};  // the cases below leave it out of their initializers
  bool vs_limit = false;  // GEMM, attention and the probe: reported against the 128-bit limit too
};

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

volatile float g_sink;  // keeps results observable so the calls are not optimised away

// The 128-bit limit: FLOP per cycle of one core running 4-wide float code without FMA (WebAssembly
// SIMD128 has none; relaxed SIMD's is behind --experimental-wasm-relaxed-simd in Node 20's V8
// 11.3, so this build does not use it). Zen 4 and Zen 5 issue two 128-bit float multiplies (pipes
// FP0/FP1) and two 128-bit float adds (FP2/FP3) per cycle: 2 x 4 + 2 x 4. A kernel reaches it
// only with every multiply paired with an add and nothing else on those pipes, as GEMM nearly is.
constexpr double kFlopPerCycle128 = 16.0;

// The clock: a chain of dependent 64-bit integer adds, one add per cycle. Each add needs the sum
// before it and an integer add has a latency of exactly 1 cycle (Zen 1-5, Intel since Core 2:
// Agner Fog's and uops.info's tables), and no core runs a dependent chain faster than its latency,
// so adds / second is cycles / second. (If an add ever took longer, the clock would read low and
// the percentages high: they are upper bounds.) The loop's counter and branch run beside the chain
// on other ALUs. Measured here, not read from /proc/cpuinfo: in a VM that reports the nominal
// (TSC) clock, and the core boosts past it.
constexpr long kClockIters = 1 << 14;
constexpr int kClockUnroll = 64;  // dependent adds per iteration (1,048,576 per sample)
volatile std::uint64_t g_clock_step = 1;  // read from memory: neither compiler can fold the adds
volatile std::uint64_t g_clock_sink;

// The empty asm says x may have changed, so the compiler cannot merge n adds of `step` into
// x + n * step (GCC and clang do at -O2 without it); it emits no instruction, natively or in
// WebAssembly (where x stays a local). V8 gets i64.add of a value loaded from memory, which it does
// not fold. Checked: g++ -O3 gives 64 `add %rcx,%rax` per iteration; the .wasm has 64 i64.add;
// V8's optimized code (node --print-wasm-code) 62 `addq` and 2 two-register `leaq` (also 1 cycle)
// per iteration, plus the loop's stack check.
inline void opaque(std::uint64_t& x) { __asm__ __volatile__("" : "+r"(x)); }

template <std::size_t... I>
inline std::uint64_t add_run(std::uint64_t x, std::uint64_t step, std::index_sequence<I...>) {
  ((x += step, opaque(x), static_cast<void>(I)), ...);
  return x;
}

__attribute__((noinline)) std::uint64_t add_chain(std::uint64_t x, std::uint64_t step, long iters) {
  for (long i = 0; i < iters; ++i) x = add_run(x, step, std::make_index_sequence<kClockUnroll>{});
  return x;
}

// Called through a volatile pointer: inlined into main (Binaryen's -O3 inlining ignores noinline),
// the chain would run in V8's baseline code for good, main being entered once and V8 having no
// on-stack replacement for WebAssembly; there each add reloads `step` from the stack, and the clock
// read 3-5 % below the native build's. As a function of its own it is tiered up after a call or two
// (and then agrees with the native build's within 1 %).
std::uint64_t (*volatile g_add_chain)(std::uint64_t, std::uint64_t, long) = add_chain;

// One sample, GHz. 1M adds take ~0.3 ms at 3.3 GHz: most samples fall between two of the
// scheduler's preemptions on a loaded machine (which make a sample read low), and the timer (ns
// natively, process.hrtime in Node) adds < 0.5 %.
double clock_sample_ghz() {
  const double t0 = now_ms();
  g_clock_sink = g_add_chain(g_clock_sink, g_clock_step, kClockIters);
  return static_cast<double>(kClockIters) * kClockUnroll / ((now_ms() - t0) * 1e6);
}

// The probe: matmul.cpp's micro-kernel k loop alone (per k: two 4-wide vectors of a panel, four
// broadcasts from a packed group of A, 8 multiplies and 8 adds into 8 accumulators, both pointers
// stepping as in micro_tile) over a panel and a packed group that stay in L1, with no epilogue,
// 4-wide in every build (sse4_1 batches, which the WebAssembly build lowers to SIMD128). It is the
// best this code shape does on the core at the time of the run: on a shared VM the core gives
// 128-bit mul+add code anywhere from ~40 % to ~98 % of the limit, changing within seconds, while
// the integer clock stays put (a sibling hardware thread on the host taking FP pipes is the likely
// cause), so a GEMM row reads against the probe's row of the same run.
using f4 = xsimd::batch<float, xsimd::sse4_1>;
constexpr int kProbeK = 256;  // panel 8 KB + packed A 4 KB: in L1

__attribute__((noinline)) float probe_kloop(const float* ap, const float* panel, int reps) {
  f4 c0[4], c1[4];
  for (int i = 0; i < 4; ++i) c0[i] = c1[i] = f4(0.0f);
  for (int r = 0; r < reps; ++r) {
    const float* pa = ap;
    const float* pb = panel;
    for (int k = 0; k < kProbeK; ++k, pa += 4, pb += 8) {
      const f4 b0 = f4::load_unaligned(pb), b1 = f4::load_unaligned(pb + 4);
      for (int i = 0; i < 4; ++i) {
        const f4 av(pa[i]);
        c0[i] = av * b0 + c0[i];
        c1[i] = av * b1 + c1[i];
      }
    }
  }
  f4 sum = c0[0] + c1[0];
  for (int i = 1; i < 4; ++i) sum += c0[i] + c1[i];
  return xsimd::hadd(sum);
}

// The peak: what the core issues of independent 4-wide multiplies and adds, without GEMM's loads
// and broadcasts. The limit above is Zen 4/5's port layout; another core's differs (Intel's Golden
// Cove, for one, starts 128-bit multiplies on two ports and adds on two, one port shared, so at
// most 3 of the 4 per cycle: 12 FLOP), so these rows measure it instead of assuming it. Each lane
// is multiplied by 1 or has 0 added (read from volatile memory: no compiler folds them), so the
// values never change and never become denormal. The chains hide the latency: kPeakChains
// independent ones per operation keep up to 2 multiplies and 2 adds a cycle in flight at a latency
// of 3-4 cycles (6 chains of each in the mixed loop, 12 of one in the single ones: at most 13 of
// the 16 XMM registers V8 and SSE4.1 code use, so nothing spills).
volatile float g_peak_one = 1.0f, g_peak_zero = 0.0f;

template <int kMul, int kAdd>
__attribute__((noinline)) float peak_loop(long iters) {
  const f4 one(g_peak_one), zero(g_peak_zero);
  f4 m[kMul > 0 ? kMul : 1], a[kAdd > 0 ? kAdd : 1];
  for (int i = 0; i < kMul; ++i) m[i] = f4(1.0f + static_cast<float>(i));
  for (int i = 0; i < kAdd; ++i) a[i] = f4(2.0f + static_cast<float>(i));
  for (long it = 0; it < iters; ++it) {
    for (int i = 0; i < (kMul > kAdd ? kMul : kAdd); ++i) {
      if (i < kMul) m[i] = m[i] * one;
      if (i < kAdd) a[i] = a[i] + zero;
    }
  }
  f4 sum(0.0f);
  for (int i = 0; i < kMul; ++i) sum += m[i];
  for (int i = 0; i < kAdd; ++i) sum += a[i];
  return xsimd::hadd(sum);
}

// Random weights for one pre-norm GELU encoder layer (d, H, ff); storage owned by `store`.
sf::EncoderLayerWeights layer_weights(int d, int H, int ff, std::vector<std::vector<float>>* store,
                                      unsigned seed) {
  auto add = [&](std::size_t n, float scale) {
    store->push_back(seeded(n, seed++, scale));
    return store->back().data();
  };
  store->reserve(16);
  const float wd = 1.0f / std::sqrt(static_cast<float>(d)), wf = 1.0f / std::sqrt(static_cast<float>(ff));
  sf::EncoderLayerWeights w;
  w.self_attn.embed_dim = d;
  w.self_attn.num_heads = H;
  w.self_attn.in_proj_weight = add(3 * d * d, wd);
  w.self_attn.in_proj_bias = add(3 * d, 0.1f);
  w.self_attn.out_proj_weight = add(d * d, wd);
  w.self_attn.out_proj_bias = add(d, 0.1f);
  w.dim_feedforward = ff;
  w.linear1_weight = add(ff * d, wd);
  w.linear1_bias = add(ff, 0.1f);
  w.linear2_weight = add(d * ff, wf);
  w.linear2_bias = add(d, 0.1f);
  w.norm1_weight = add(d, 1.0f);
  w.norm1_bias = add(d, 0.1f);
  w.norm2_weight = add(d, 1.0f);
  w.norm2_bias = add(d, 0.1f);
  return w;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int rounds = 7;
  for (int i = 1; i < argc; i++) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: sensorformer_bench [--quick] [--rounds R]\n");
      return 2;
    }
  }
  if (rounds < 1 || rounds > 1000) {
    std::fprintf(stderr, "--rounds must be 1..1000\n");
    return 2;
  }
  std::vector<Case> cases;
  std::vector<std::vector<float>> buffers;  // inputs/outputs the cases point into
  buffers.reserve(256);
  auto buf = [&](std::size_t n, unsigned seed) {
    buffers.push_back(seeded(n, seed));
    return buffers.back().data();
  };

  {
    float* A = buf(4 * kProbeK, 5);
    float* panel = buf(8 * kProbeK, 6);
    constexpr int kReps = 64;  // 1 MFLOP per call
    cases.push_back({"probe: 4x8 mul+add k loop in L1", 64.0 * kProbeK * kReps, [=] {
                       g_sink = probe_kloop(A, panel, kReps);
                     }});
    cases.back().vs_limit = true;
  }

  {
    constexpr long kIters = 1 << 14;  // 12 vector operations of 4 FLOP per iteration: 0.8 MFLOP per call
    cases.push_back({"peak: 4-wide mul+add, 6+6 chains", 48.0 * kIters, [] { g_sink = peak_loop<6, 6>(kIters); }});
    cases.back().vs_limit = true;
    cases.push_back({"peak: 4-wide mul only, 12 chains", 48.0 * kIters, [] { g_sink = peak_loop<12, 0>(kIters); }});
    cases.back().vs_limit = true;
    cases.push_back({"peak: 4-wide add only, 12 chains", 48.0 * kIters, [] { g_sink = peak_loop<0, 12>(kIters); }});
    cases.back().vs_limit = true;
  }

  // Projection shapes of the d 64 / ff 256 encoder at N = 1024 tokens: Q/K/V, out, linear1, linear2.
  const int T = 1024;
  struct Gemm { const char* what; int M, N, K; };
  struct Operands { float *A, *B, *bias, *C; };
  auto operands = [&](const Gemm& g) {
    return Operands{buf(static_cast<std::size_t>(g.M) * g.K, 1), buf(static_cast<std::size_t>(g.N) * g.K, 2),
                    buf(g.N, 3), buf(static_cast<std::size_t>(g.M) * g.N, 4)};
  };
  auto gemm_name = [](const char* kernel, const Gemm& g) {
    return std::string(kernel) + " " + g.what + " " + std::to_string(g.M) + "x" + std::to_string(g.N) + "x" +
           std::to_string(g.K);
  };
  for (Gemm g : {Gemm{"qkv", T, 192, 64}, Gemm{"out", T, 64, 64}, Gemm{"linear1", T, 256, 64},
                 Gemm{"linear2", T, 64, 256}}) {
    const Operands o = operands(g);
    cases.push_back({gemm_name("gemm_nt", g), 2.0 * g.M * g.N * g.K, [=] {
                       sf::kernels::gemm_nt(g.M, g.N, g.K, 1.0f, o.A, g.K, o.B, g.K, o.bias, o.C, g.N);
                       g_sink = o.C[0];
                     }});
    cases.back().vs_limit = true;
  }

  // The same products as the Model runs them: weights packed once (at load), gemm_packed per call,
  // at 1024 rows and at the 64 of a small window.
  static std::vector<sf::kernels::PackedWeights> packed;
  packed.reserve(8);
  for (Gemm g : {Gemm{"qkv", T, 192, 64}, Gemm{"linear1", T, 256, 64}, Gemm{"linear2", T, 64, 256},
                 Gemm{"qkv", 64, 192, 64}, Gemm{"linear1", 64, 256, 64}, Gemm{"linear2", 64, 64, 256}}) {
    const Operands o = operands(g);
    packed.emplace_back();
    sf::kernels::pack_weights(o.B, g.N, g.K, g.K, o.bias, &packed.back());
    const sf::kernels::PackedWeights* W = &packed.back();
    cases.push_back({gemm_name("gemm_packed", g), 2.0 * g.M * g.N * g.K, [=] {
                       sf::kernels::gemm_packed(g.M, o.A, g.K, *W, 1.0f, sf::kernels::Act::kNone, false, o.C, g.N);
                       g_sink = o.C[0];
                     }});
    cases.back().vs_limit = true;
  }

  // N = 64: one head of a small window (the streaming regime), where the per-call and per-row
  // work (packing, the softmax's bookkeeping, the output's scaling) weighs most. Every call gets a
  // workspace kept across calls, as the model's layers pass one.
  static std::vector<std::unique_ptr<sf::kernels::AttentionWorkspace>> workspaces;
  for (int Dh : {16, 64}) {
    for (int N : {64, 256, 1024, 4096}) {
      if (quick && N > 1024) continue;
      float* q = buf(static_cast<std::size_t>(N) * Dh, 10 + Dh);
      float* k = buf(static_cast<std::size_t>(N) * Dh, 11 + Dh);
      float* v = buf(static_cast<std::size_t>(N) * Dh, 12 + Dh);
      float* o = buf(static_cast<std::size_t>(N) * Dh, 13);
      const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
      workspaces.push_back(std::make_unique<sf::kernels::AttentionWorkspace>());
      sf::kernels::AttentionWorkspace* ws = workspaces.back().get();
      cases.push_back({"attention_head Dh " + std::to_string(Dh) + " N " + std::to_string(N),
                       4.0 * N * N * Dh, [=] {
                         sf::kernels::attention_head(N, N, Dh, scale, q, Dh, k, Dh, v, Dh, nullptr,
                                                     nullptr, o, Dh, nullptr, ws);
                         g_sink = o[0];
                       }});
      cases.back().vs_limit = true;
    }
  }

  {
    const int n = T * 256;  // the linear1 output of the encoder at N = 1024
    float* x = buf(n, 20);
    float* y = buf(n, 21);
    cases.push_back({"gelu 1024x256 (Gelem/s)", static_cast<double>(n), [=] {
                       sf::kernels::gelu(x, n, y);
                       g_sink = y[0];
                     }});
    float* a = buf(static_cast<std::size_t>(T) * 64, 22);
    float* b = buf(static_cast<std::size_t>(T) * 64, 23);
    float* gamma = buf(64, 24);
    float* beta = buf(64, 25);
    cases.push_back({"layer_norm 1024x64 (Gelem/s)", static_cast<double>(T) * 64, [=] {
                       sf::kernels::layer_norm(a, T, 64, gamma, beta, sf::kernels::kLayerNormEps, b);
                       g_sink = b[0];
                     }});
  }

  // Two encoder layers (the encoder workload of `npm run bench` without tokenization), in place
  // on a copy of a fixed input so every call sees the same values.
  std::vector<std::vector<float>> layer_store;
  layer_store.reserve(64);
  std::vector<sf::EncoderLayerWeights> layers;
  for (int l = 0; l < 2; l++) layers.push_back(layer_weights(64, 4, 256, &layer_store, 100 + 20 * l));
  sf::EncoderLayerOptions options;
  options.norm_first = true;
  options.activation = sf::Activation::kGelu;
  for (int N : {256, 1024}) {
    const float* x0 = buf(static_cast<std::size_t>(N) * 64, 30);
    float* x = buf(static_cast<std::size_t>(N) * 64, 31);
    const double flops = 2.0 * (8.0 * N * 64 * 64 + 4.0 * N * N * 64 + 4.0 * N * 64 * 256);
    cases.push_back({"encoder 2 layers d 64 N " + std::to_string(N), flops, [=, &layers, &options] {
                       std::memcpy(x, x0, sizeof(float) * N * 64);
                       for (const auto& w : layers) {
                         const sf::Status s = sf::encoder_layer(w, options, x, N, nullptr, nullptr, nullptr);
                         if (!s.ok()) {
                           std::fprintf(stderr, "encoder_layer: %s\n", s.message().c_str());
                           std::exit(1);
                         }
                       }
                       g_sink = x[0];
                     }});
  }

  // Warm-up round: also fixes each case's calls per sample (and gets the clock loop tiered up).
  for (auto& c : cases) {
    const double t0 = now_ms();
    c.run();
    const double once = std::max(now_ms() - t0, 1e-3);
    c.calls = std::max(1, static_cast<int>(std::ceil(kMinSampleMs / once)));
    clock_sample_ghz();
  }
  // A clock sample right after every case's sample: the clock is the one the kernels just ran at
  // (a boost or power-limit change takes milliseconds) under the same load, over the whole run.
  std::vector<double> ghz;
  for (int r = 0; r < rounds; r++) {
    for (auto& c : cases) {
      const double t0 = now_ms();
      for (int i = 0; i < c.calls; i++) c.run();
      c.ms.push_back((now_ms() - t0) / c.calls);
      ghz.push_back(clock_sample_ghz());
    }
  }
  const double clock = median(ghz), limit = kFlopPerCycle128 * clock;
  std::printf("{\"kernel\": \"clock\", \"ghz\": %.3f, \"limit_gflops\": %.2f}\n", clock, limit);
  for (auto& c : cases) {
    const double ms = median(c.ms), gflops = c.flops / ms / 1e6;
    std::printf("{\"kernel\": \"%s\", \"gflops\": %.3f, \"ms\": %.4f", c.name.c_str(), gflops, ms);
    if (c.vs_limit) std::printf(", \"limit_pct\": %.1f", 100.0 * gflops / limit);
    std::printf("}\n");
  }
  return 0;
}
