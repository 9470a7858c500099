// SPDX-License-Identifier: BSD-3-Clause
// The assertion every axis's invariance test makes with the shared oracle
// (invariance.hpp): compare a layout run with its single-rank reference, check the
// bounds, and print the errors on world rank 0 (the figures the closing notes quote).
#pragma once
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "invariance.hpp"

namespace mini5d::test {

inline void check_invariant(const Reference& ref, const train::Trainer& run, const std::string& layout,
                            const std::string& config, const Tolerance& tol = {}) {
  const Invariance w = compare_runs(ref, run);
  INFO(layout << ", " << config << ": loss " << w.loss << ", grad norm " << w.grad_norm << ", sum " << w.sum
              << ", sum of squares " << w.sum_sq);
  CHECK(within(w, tol));
  if (world_rank() == 0)
    std::printf("invariance %s, %s: loss %.3g, grad norm %.3g, sum %.3g, sum of squares %.3g\n", layout.c_str(),
                config.c_str(), w.loss, w.grad_norm, w.sum, w.sum_sq);
}

}  // namespace mini5d::test
