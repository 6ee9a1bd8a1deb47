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
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "attend/encoder_layer.hpp"
#include "kernels/activation.hpp"
#include "kernels/attention.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/matmul.hpp"

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

  // Projection shapes of the d 64 / ff 256 encoder at N = 1024 tokens: Q/K/V, out, linear1, linear2.
  const int T = 1024;
  struct Gemm { const char* what; int M, N, K; };
  for (Gemm g : {Gemm{"qkv", T, 192, 64}, Gemm{"out", T, 64, 64}, Gemm{"linear1", T, 256, 64},
                 Gemm{"linear2", T, 64, 256}}) {
    float* A = buf(static_cast<std::size_t>(g.M) * g.K, 1);
    float* B = buf(static_cast<std::size_t>(g.N) * g.K, 2);
    float* bias = buf(g.N, 3);
    float* C = buf(static_cast<std::size_t>(g.M) * g.N, 4);
    cases.push_back({"gemm_nt " + std::string(g.what) + " " + std::to_string(g.M) + "x" +
                         std::to_string(g.N) + "x" + std::to_string(g.K),
                     2.0 * g.M * g.N * g.K, [=] {
                       sf::kernels::gemm_nt(g.M, g.N, g.K, 1.0f, A, g.K, B, g.K, bias, C, g.N);
                       g_sink = C[0];
                     }});
  }

  for (int Dh : {16, 64}) {
    for (int N : {256, 1024, 4096}) {
      if (quick && N > 1024) continue;
      float* q = buf(static_cast<std::size_t>(N) * Dh, 10 + Dh);
      float* k = buf(static_cast<std::size_t>(N) * Dh, 11 + Dh);
      float* v = buf(static_cast<std::size_t>(N) * Dh, 12 + Dh);
      float* o = buf(static_cast<std::size_t>(N) * Dh, 13);
      const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
      cases.push_back({"attention_head Dh " + std::to_string(Dh) + " N " + std::to_string(N),
                       4.0 * N * N * Dh, [=] {
                         sf::kernels::attention_head(N, N, Dh, scale, q, Dh, k, Dh, v, Dh, nullptr,
                                                     nullptr, o, Dh, nullptr);
                         g_sink = o[0];
                       }});
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

  // Warm-up round: also fixes each case's calls per sample.
  for (auto& c : cases) {
    const double t0 = now_ms();
    c.run();
    const double once = std::max(now_ms() - t0, 1e-3);
    c.calls = std::max(1, static_cast<int>(std::ceil(kMinSampleMs / once)));
  }
  for (int r = 0; r < rounds; r++) {
    for (auto& c : cases) {
      const double t0 = now_ms();
      for (int i = 0; i < c.calls; i++) c.run();
      c.ms.push_back((now_ms() - t0) / c.calls);
    }
  }
  for (auto& c : cases) {
    const double ms = median(c.ms);
    std::printf("{\"kernel\": \"%s\", \"gflops\": %.3f, \"ms\": %.4f}\n", c.name.c_str(),
                c.flops / ms / 1e6, ms);
  }
  return 0;
}
