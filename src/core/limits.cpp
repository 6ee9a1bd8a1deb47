// The heap's part of the budgets (src/core/limits.hpp).
#include "core/limits.hpp"

#include <cstdint>

#ifdef __EMSCRIPTEN__
#include <emscripten/heap.h>
#include <malloc.h>
#include <unistd.h>
#endif

namespace sf::limits {

// Run once per call, before its large buffers: compiled for size (clang's minsize), as the rest
// of the checking code is (BENCHMARKS.md, "Size").
#if defined(__clang__)
__attribute__((minsize))
#endif
std::size_t budget(std::size_t limit, double beside) {
#ifdef __EMSCRIPTEN__
  const double ceiling = static_cast<double>(emscripten_get_heap_max());
  const double brk = static_cast<double>(reinterpret_cast<std::uintptr_t>(sbrk(0)));
  const double above = ceiling - brk - static_cast<double>(kHeapMarginBytes) - beside;
  // Room above the break alone: the budget is the limit, and the free blocks need not be
  // counted (mallinfo walks every chunk of the heap: ~7 % of a 1-token forward).
  if (above >= static_cast<double>(limit)) return limit;
  // Freed blocks below the break are reused before the heap grows (dlmalloc's fordblks).
  const double left = above + static_cast<double>(mallinfo().fordblks);
  if (left < static_cast<double>(limit)) return left > 0 ? static_cast<std::size_t>(left) : 0;
#else
  (void)beside;
#endif
  return limit;
}

}  // namespace sf::limits
