// Shared test helpers: torch.allclose-style comparison that reports the largest difference, random
// inputs with fixed seeds, and the committed PyTorch fixtures.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "io/safetensors.hpp"

namespace sf::testing {

struct Closeness {
  double max_abs = 0.0;    // largest |actual - expected|
  size_t worst = 0;        // index of the element furthest outside (or closest to) its tolerance
  double worst_ratio = 0;  // |a - e| / (atol + rtol*|e|) at that element; <= 1 passes
};

// Element-wise |a - e| <= atol + rtol * |e| (torch.allclose). A NaN anywhere fails.
template <class A, class E>
::testing::AssertionResult AllClose(const A* actual, const E* expected, size_t n, double atol,
                                    double rtol, const std::string& what,
                                    Closeness* out = nullptr) {
  Closeness c;
  bool nan = false;
  for (size_t i = 0; i < n; ++i) {
    const double a = actual[i], e = expected[i];
    if (std::isnan(a) || std::isnan(e)) {
      nan = true;
      c.worst = i;
      break;
    }
    const double d = std::fabs(a - e);
    c.max_abs = std::max(c.max_abs, d);
    const double ratio = d / (atol + rtol * std::fabs(e));
    if (ratio > c.worst_ratio || i == 0) {
      c.worst_ratio = ratio;
      c.worst = i;
    }
  }
  if (out) *out = c;
  std::ostringstream m;
  m.precision(9);
  m << what << ": n=" << n << " max|diff|=" << c.max_abs << " worst at [" << c.worst
    << "] actual=" << (n ? double(actual[c.worst]) : 0.0)
    << " expected=" << (n ? double(expected[c.worst]) : 0.0) << " (atol " << atol << ", rtol "
    << rtol << ")";
  if (nan) return ::testing::AssertionFailure() << "NaN: " << m.str();
  if (c.worst_ratio > 1.0) return ::testing::AssertionFailure() << m.str();
  return ::testing::AssertionSuccess() << m.str();
}

inline std::vector<float> random_floats(size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// The committed fixtures (tools/reference/make_fixtures.py), read once per process.
inline const SafetensorsFile& fixture(const std::string& file) {
  static std::map<std::string, SafetensorsFile> cache;
  auto it = cache.find(file);
  if (it == cache.end()) {
    SafetensorsFile f;
    const Status s = SafetensorsFile::read(std::string(SF_FIXTURE_DIR) + "/" + file, &f);
    if (!s.ok()) ADD_FAILURE() << s.message();
    it = cache.emplace(file, std::move(f)).first;
  }
  return it->second;
}

template <class T>
std::vector<T> tensor(const SafetensorsFile& f, const std::string& name);
template <>
inline std::vector<float> tensor(const SafetensorsFile& f, const std::string& name) {
  std::vector<float> v;
  const Status s = f.get_f32(name, &v);
  EXPECT_TRUE(s.ok()) << s.message();
  return v;
}
template <>
inline std::vector<double> tensor(const SafetensorsFile& f, const std::string& name) {
  std::vector<double> v;
  const Status s = f.get_f64(name, &v);
  EXPECT_TRUE(s.ok()) << s.message();
  return v;
}
template <>
inline std::vector<std::int32_t> tensor(const SafetensorsFile& f, const std::string& name) {
  std::vector<std::int32_t> v;
  const Status s = f.get_i32(name, &v);
  EXPECT_TRUE(s.ok()) << s.message();
  return v;
}

// One line per comparison, so the largest parity error of every fixture case is in the log.
inline void report(const std::string& what, const Closeness& c) {
  std::printf("[ parity   ] %-48s max|diff| = %.3g\n", what.c_str(), c.max_abs);
}

}  // namespace sf::testing
