// Attention layouts (seed 003): which tokens attend to which. A layout splits the window's tokens
// into groups; attention mixes tokens of one group only.
//   flattened: one group, every token
//   time:      one group per stream (channel-independent)
//   channel:   one group per time bin floor((t - reference_time) / time_bin), across streams
// Every group lists its tokens in time order (stable), so a time-causal mask is a key prefix.
#pragma once

#include <cstdint>
#include <vector>

#include "tokenize/tokenizer.hpp"

namespace sf {

enum class AttentionBlock { kFlattened, kTime, kChannel };
const char* block_name(AttentionBlock b);

// The attention blocks each layer of a layout runs, in order: factorized runs time, then channel.
std::vector<AttentionBlock> layout_blocks(Layout layout);

using TokenGroups = std::vector<std::vector<int>>;
TokenGroups group_tokens(const Tokens& tokens, AttentionBlock block, double time_bin);

// For tokens sorted by time: key_limit[i] = number of keys whose time is <= times[i].
std::vector<int> time_causal_limits(const std::vector<double>& sorted_times);

// For tokens sorted by time and a look-back of W seconds: key_start[i] = index of the first key j
// with times[i] - times[j] <= W (in float64, the expression the reference evaluates), so keys
// [key_start[i], key_limit[i]) are those in [t_i - W, t_i]. Float64 subtraction is monotone, so
// the kept keys are one contiguous run of the sorted group.
std::vector<int> time_lookback_starts(const std::vector<double>& sorted_times, double lookback_s);

}  // namespace sf
