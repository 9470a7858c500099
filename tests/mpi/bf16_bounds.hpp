// SPDX-License-Identifier: BSD-3-Clause
// What the bf16 layout tests share (test_bf16_layouts and the files in its binary): the
// bounds against a single bf16 rank, whose derivation is in test_bf16_layouts.cpp, the
// tensors left out of the checksums, and the bf16 overrides of a deck.
#pragma once
#include <string>
#include <vector>

#include "invariance.hpp"

namespace mini5d::test {

constexpr double kBf16U = 1.0 / 256;  // bf16's unit roundoff, 2^-8
// Losses within u; grad norms, parameter sums and sums of squares within 8u.
inline const Tolerance kBf16Bounds{kBf16U, 8 * kBf16U, 8 * kBf16U, 8 * kBf16U};

// The key biases of `layers` blocks: their exact gradient is zero, and in bf16 AdamW
// turns their rounding noise into full steps, differently in every layout.
inline std::vector<std::string> key_biases(int layers) {
  std::vector<std::string> names;
  for (int b = 0; b < layers; ++b) names.push_back("blocks." + std::to_string(b) + ".attn.qkv.bias");
  return names;
}

// `a`, then `b`, then train.precision=bf16.
inline std::vector<std::string> bf16_with(std::vector<std::string> a, const std::vector<std::string>& b = {}) {
  a.insert(a.end(), b.begin(), b.end());
  a.push_back("train.precision=bf16");
  return a;
}

}  // namespace mini5d::test
