// The encoder layer's fused vector path against its reference twin, with and without the packed
// weights a Model makes, and its workspace: reused across calls of any size with the same results,
// and no allocation once it has seen the largest group.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "attend/encoder_layer.hpp"
#include "kernels/matmul.hpp"
#include "testing.hpp"

// Counts global allocations while `g_counting` is set (only the test below sets it; the count
// covers every operator new of the program, including the kernels' std::vectors).
namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
}  // namespace

// Every replaceable non-aligned form, so that whatever allocates (std::stable_sort's nothrow
// temporary buffer included) frees through the same pair: ASan reports a mismatch otherwise.
namespace {
void* counted_malloc(std::size_t n) {
  if (g_counting) ++g_allocations;
  return std::malloc(n ? n : 1);
}
void* counted_new(std::size_t n) {
  if (void* p = counted_malloc(n)) return p;
  std::abort();  // out of memory in a test binary
}
}  // namespace

void* operator new(std::size_t n) { return counted_new(n); }
void* operator new[](std::size_t n) { return counted_new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace sf {
namespace {

using sf::testing::AllClose;
using sf::testing::random_floats;

struct LayerParams {
  std::vector<float> store;
  kernels::PackedWeights in_proj, out_proj, linear1, linear2;
  EncoderLayerWeights w;
};

void make_layer(int d, int H, int ff, unsigned seed, bool packed, LayerParams* p) {
  const size_t sizes[] = {size_t(3 * d * d), size_t(3 * d), size_t(d * d), size_t(d), size_t(ff * d), size_t(ff),
                          size_t(d * ff), size_t(d), size_t(d), size_t(d), size_t(d), size_t(d)};
  size_t total = 0;
  for (size_t s : sizes) total += s;
  p->store = random_floats(total, seed, -0.4f, 0.4f);
  std::vector<const float*> ptr;
  size_t off = 0;
  for (size_t s : sizes) ptr.push_back(p->store.data() + off), off += s;
  for (int i = 0; i < d; ++i) p->store[(ptr[8] - p->store.data()) + i] += 1.0f;   // norm1 gain ~1
  for (int i = 0; i < d; ++i) p->store[(ptr[10] - p->store.data()) + i] += 1.0f;  // norm2 gain ~1
  EncoderLayerWeights& w = p->w;
  w.self_attn = {d, H, ptr[0], ptr[1], ptr[2], ptr[3]};
  w.dim_feedforward = ff;
  w.linear1_weight = ptr[4], w.linear1_bias = ptr[5], w.linear2_weight = ptr[6], w.linear2_bias = ptr[7];
  w.norm1_weight = ptr[8], w.norm1_bias = ptr[9], w.norm2_weight = ptr[10], w.norm2_bias = ptr[11];
  if (!packed) return;
  kernels::pack_weights(ptr[0], 3 * d, d, d, ptr[1], &p->in_proj);
  kernels::pack_weights(ptr[2], d, d, d, ptr[3], &p->out_proj);
  kernels::pack_weights(ptr[4], ff, d, d, ptr[5], &p->linear1);
  kernels::pack_weights(ptr[6], d, ff, ff, ptr[7], &p->linear2);
  w.self_attn.in_proj_packed = &p->in_proj;
  w.self_attn.out_proj_packed = &p->out_proj;
  w.linear1_packed = &p->linear1;
  w.linear2_packed = &p->linear2;
}

// Pre- and post-norm, GELU and ReLU, group sizes from the demo's (1-51) to past a row block, packed
// weights or per-call packing, one workspace reused across all of it in a fixed order.
TEST(EncoderLayer, FusedVectorPathMatchesTwin) {
  LayerWorkspace ws;
  for (bool packed : {true, false}) for (bool norm_first : {true, false})
    for (Activation act : {Activation::kGelu, Activation::kRelu}) for (int n : {51, 1, 7, 130, 16}) {
      const int d = 32, H = 4, ff = 64;
      LayerParams p;
      make_layer(d, H, ff, 7 + n, packed, &p);
      EncoderLayerOptions o;
      o.norm_first = norm_first;
      o.activation = act;
      auto x = random_floats(static_cast<size_t>(n) * d, 100 + n, -2.0f, 2.0f), xr = x;
      std::vector<std::uint8_t> ignore(n, 0);
      if (n > 2) ignore[1] = 1;
      ASSERT_TRUE(encoder_layer(p.w, o, x.data(), n, ignore.data(), nullptr, nullptr, &ws).ok());
      o.kernels = kernels::KernelSet::kReference;
      ASSERT_TRUE(encoder_layer(p.w, o, xr.data(), n, ignore.data(), nullptr, nullptr, nullptr).ok());
      // The model test's simd-vs-twin tolerance (test_model.cpp): sums of 32-64 products in
      // another order and the vector erf, through two layer norms (outputs of order 1).
      ASSERT_TRUE(AllClose(x.data(), xr.data(), x.size(), 2e-5, 1e-5,
                           "layer n=" + std::to_string(n) + (packed ? " packed" : " per-call") +
                               (norm_first ? " pre-norm" : " post-norm") + (act == Activation::kGelu ? " gelu" : " relu")));
    }
}

// After one call with the largest group, calls with that group or smaller ones allocate nothing
// of the layer's own (the arena's promise), and give bit-identical results to a call with a fresh workspace.
TEST(EncoderLayer, WorkspaceAllocatesNothingAfterWarmUp) {
  const int d = 64, H = 4, ff = 256;
  for (bool packed : {true, false}) {
    LayerParams p;
    make_layer(d, H, ff, 5, packed, &p);
    EncoderLayerOptions o;
    o.norm_first = true;
    o.activation = Activation::kGelu;
    LayerWorkspace ws;
    auto big = random_floats(static_cast<size_t>(300) * d, 8);
    ASSERT_TRUE(encoder_layer(p.w, o, big.data(), 300, nullptr, nullptr, nullptr, &ws).ok());  // warm-up
    for (int n : {300, 1, 51, 17}) {
      const auto x0 = random_floats(static_cast<size_t>(n) * d, 9 + n);
      std::vector<float> x = x0, fresh = x0;
      g_allocations = 0;
      g_counting = true;
      const Status s = encoder_layer(p.w, o, x.data(), n, nullptr, nullptr, nullptr, &ws);
      g_counting = false;
      ASSERT_TRUE(s.ok());
      // The one allocation left is not the layer's: attention_head (src/kernels/attention.cpp, being
      // rewritten for issue 10 item 2) allocates its Dh-float accumulator once per head call.
      // Before the workspace this call made 6 more (y, sa, hidden, q, kv, ctx). Tighten to 0 once
      // the attention kernel takes its scratch from the caller.
      EXPECT_LE(g_allocations.load(), H) << "n=" << n << (packed ? " packed" : " per-call packing");
      ASSERT_TRUE(encoder_layer(p.w, o, fresh.data(), n, nullptr, nullptr, nullptr, nullptr).ok());
      EXPECT_EQ(x, fresh) << "reused workspace changed the result, n=" << n;
    }
  }
}

}  // namespace
}  // namespace sf
