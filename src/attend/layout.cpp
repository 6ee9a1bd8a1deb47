#include "attend/layout.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace sf {

const char* block_name(AttentionBlock b) {
  switch (b) {
    case AttentionBlock::kFlattened: return "flattened";
    case AttentionBlock::kTime: return "time";
    case AttentionBlock::kChannel: return "channel";
  }
  return "?";
}

std::vector<AttentionBlock> layout_blocks(Layout layout) {
  switch (layout) {
    case Layout::kFlattened: return {AttentionBlock::kFlattened};
    case Layout::kTime: return {AttentionBlock::kTime};
    case Layout::kChannel: return {AttentionBlock::kChannel};
    case Layout::kFactorized: return {AttentionBlock::kTime, AttentionBlock::kChannel};
  }
  return {};
}

TokenGroups group_tokens(const Tokens& t, AttentionBlock block, double time_bin) {
  TokenGroups groups;
  if (block == AttentionBlock::kFlattened) {
    groups.emplace_back();
    for (int i = 0; i < t.count; ++i) groups.back().push_back(i);
  } else if (block == AttentionBlock::kTime) {
    for (int i = 0; i < t.count; ++i) {
      if (i == 0 || t.stream[i] != t.stream[i - 1]) groups.emplace_back();
      groups.back().push_back(i);
    }
  } else {
    std::map<long long, std::vector<int>> bins;  // ordered by bin
    for (int i = 0; i < t.count; ++i)
      bins[static_cast<long long>(std::floor((t.time[i] - t.reference_time) / time_bin))].push_back(i);
    for (auto& [bin, members] : bins) groups.push_back(std::move(members));
  }
  for (auto& g : groups)
    std::stable_sort(g.begin(), g.end(), [&](int a, int b) { return t.time[a] < t.time[b]; });
  return groups;
}

std::vector<int> time_causal_limits(const std::vector<double>& sorted_times) {
  std::vector<int> limit(sorted_times.size());
  for (size_t i = 0; i < sorted_times.size(); ++i)
    limit[i] = static_cast<int>(std::upper_bound(sorted_times.begin(), sorted_times.end(), sorted_times[i]) -
                                sorted_times.begin());
  return limit;
}

std::vector<int> time_lookback_starts(const std::vector<double>& sorted_times, double lookback_s) {
  std::vector<int> start(sorted_times.size());
  for (size_t i = 0; i < sorted_times.size(); ++i) {
    const double ti = sorted_times[i];
    start[i] = static_cast<int>(std::partition_point(sorted_times.begin(), sorted_times.end(),
                                                     [&](double tj) { return ti - tj > lookback_s; }) -
                                sorted_times.begin());
  }
  return start;
}

}  // namespace sf
