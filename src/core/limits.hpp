// Limits on what the core accepts from untrusted input (weights files, windows, kernel calls).
//
// Why they exist: in WebAssembly a failed allocation aborts the whole module (Emscripten builds
// catch no exceptions) and a runaway forward blocks the page's thread. So every size that comes
// from outside is bounded, every buffer whose size the input sets is checked against a budget
// before it is allocated, and the cost of a forward is estimated before it runs. A request past a
// limit gets kResourceExhausted (or kBadFormat for a config field), never an abort.
// docs/model.md "Limits" lists these for users.
#pragma once

#include <cstddef>

namespace sf::limits {

// Model config fields (inclusive ranges). Far above any wearable model (the demo: d 32, 2 layers);
// they keep every shape product and the parameter count far from overflow (< 2^43).
constexpr int kMaxDModel = 8192;
constexpr int kMaxHeads = 1024;
constexpr int kMaxLayers = 1024;
constexpr int kMaxFeedforward = 65536;
constexpr int kMaxSensors = 1 << 20;
constexpr int kMaxOutputs = 1 << 20;
constexpr int kMaxPatchLen = 65536;
constexpr int kMaxModalities = 4096;
constexpr int kMaxPlacements = 4096;
constexpr int kMaxRateEdges = 1024;
constexpr std::size_t kMaxNameBytes = 256;  // modality and placement names

// float32 parameters held in memory by one model (F16/BF16 files double in size on load).
constexpr std::size_t kMaxModelBytes = std::size_t(1) << 30;

// Attention maps returned by a forward or by multihead attention: H x g x g floats per group.
constexpr std::size_t kMaxAttentionMapBytes = std::size_t(256) << 20;

// Everything else a forward or kernel call allocates for its input (token values, embeddings,
// projections, per-group buffers), estimated before anything is allocated.
constexpr std::size_t kMaxWorkBytes = std::size_t(1) << 30;

// Default compute limit of one forward, in GFLOP (multiply-adds count 2). About 1-2 s of one core
// in WebAssembly today; callers raise or lower it per call (ForwardOptions::max_gflop).
constexpr double kDefaultMaxGflop = 10.0;

// |t - reference_time| beyond this is refused (kNonFinite). At 1e12 s the float64 angle of the
// 1 rad/s component still resolves 1.2e-4 rad; near 1e300 the angle reduction itself overflows and
// the encoding would be NaN. Seconds since 1970 (1.8e9) are far inside.
constexpr double kMaxTimeOffsetSeconds = 1e12;

// The budgets above hold one at a time; together (an input's copy, its patches, the working memory)
// they exceed the WebAssembly heap's 2 GiB ceiling. So a large buffer's budget is also what the
// heap has left when it is about to be allocated: its ceiling less the program break, plus the
// allocator's free blocks, less kHeapMarginBytes (for what no budget counts) and less `beside`
// (bytes allocated with it, such as the attention maps beside the working memory). Natively the
// operating system decides: `limit` as it is.
constexpr std::size_t kHeapMarginBytes = std::size_t(64) << 20;
std::size_t budget(std::size_t limit, double beside = 0);

}  // namespace sf::limits
