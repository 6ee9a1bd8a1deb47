// Numbers in error messages: the shortest decimal that reads back as the same value (%.Ng with the
// smallest N that round-trips), so that a message shows 1e+300 where std::to_string printed 301
// digits, and 1e-10 where it printed "0.000000". snprintf/strtod rather than <sstream> (about 70 KB
// of locale code in the .wasm) or std::to_chars (no floating-point overloads in Emscripten 3.1.6's
// libc++). For messages only: it loops over up to 17 precisions.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace sf {

inline std::string shortest(double v) {
  char b[32];  // "%.17g" of a double is at most 24 characters
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(b, sizeof b, "%.*g", p, v);
    if (std::strtod(b, nullptr) == v) break;  // NaN never compares equal: "nan" at p = 17
  }
  return b;
}

// A float32 value: at most 9 significant digits (FLT_DECIMAL_DIG), read back as a float.
inline std::string shortest(float v) {
  char b[32];
  for (int p = 1; p <= 9; ++p) {
    std::snprintf(b, sizeof b, "%.*g", p, static_cast<double>(v));
    if (std::strtof(b, nullptr) == v) break;
  }
  return b;
}

}  // namespace sf
