// Numbers in error messages: the shortest decimal that reads back as the same value (%.Ng with the
// smallest N that round-trips), so that a message shows 1e+300 where std::to_string printed 301
// digits, and 1e-10 where it printed "0.000000". snprintf/strtod rather than <sstream> (about 70 KB
// of locale code in the .wasm) or std::to_chars (no floating-point overloads in Emscripten 3.1.6's
// libc++). For messages only: it loops over up to 17 precisions.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace sf {

// %g switches to an exponent once the exponent reaches the precision: the fewest digits of 10 are
// "1e+01". Below 1e15 the same digits are printed positionally ("10", "1764460802.7"), as people
// write them (and as JavaScript prints numbers).
inline std::string positional(const char* b, double v) {
  const char* e = std::strchr(b, 'e');
  if (!e || e[1] != '+' || std::atoi(e + 2) >= 15) return b;
  char out[32];
  std::snprintf(out, sizeof out, "%.*g", std::atoi(e + 2) + 1, v);
  return out;
}

inline std::string shortest(double v) {
  char b[32];  // "%.17g" of a double is at most 24 characters
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(b, sizeof b, "%.*g", p, v);
    if (std::strtod(b, nullptr) == v) break;  // NaN never compares equal: "nan" at p = 17
  }
  return positional(b, v);
}

// A float32 value: at most 9 significant digits (FLT_DECIMAL_DIG), read back as a float.
inline std::string shortest(float v) {
  char b[32];
  for (int p = 1; p <= 9; ++p) {
    std::snprintf(b, sizeof b, "%.*g", p, static_cast<double>(v));
    if (std::strtof(b, nullptr) == v) break;
  }
  return positional(b, v);
}

}  // namespace sf
