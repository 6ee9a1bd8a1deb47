// Which implementation a model stage runs: the xsimd kernels, or their scalar `_ref` twins (the
// executable definition of the math, used by tests as the oracle and for debugging).
#pragma once

namespace sf::kernels {
enum class KernelSet { kSimd, kReference };
}
