// SPDX-License-Identifier: BSD-3-Clause
// The known-bad snippet of scripts/lint-nan-compare.py: worst-error loops that skip a
// NaN (every comparison with NaN is false), as the tests had them before they went
// through tests/support/compare.hpp, and the same loops written safely. Not built with
// the project; every line marked NAN-BLIND must be flagged, the others not.
#include <algorithm>
#include <cmath>
#include <vector>

#include "compare.hpp"

namespace test = mini5d::test;

double blind(const std::vector<double>& got, const std::vector<double>& want, double bound) {
  double worst = 0, scale = 0, w = 0, big = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::abs(got[i] - want[i]));  // NAN-BLIND
    scale = std::fmax(scale, std::fabs(want[i]));  // NAN-BLIND
    worst = fmax(worst, std::sqrt(got[i] * got[i]));  // NAN-BLIND
    worst = std::max<double>(worst, got[i] - want[i]);  // NAN-BLIND
    const double r = std::fabs(got[i] - want[i]) / bound;
    w = r > w ? r : w;  // NAN-BLIND
    w = w < r ? r : w;  // NAN-BLIND
    big = std::fabs(want[i]) > big ? std::fabs(want[i]) : big;  // NAN-BLIND
    if (r > w) w = r;  // NAN-BLIND
    if (w < r) {  // NAN-BLIND
      w = r;
    }
  }
  const std::vector<double> errors(got.size());
  const double most = *std::max_element(errors.begin(), errors.end());  // NAN-BLIND
  const double first = std::max({std::abs(got[0] - want[0]), std::abs(got[1] - want[1])});  // NAN-BLIND
  return worst + scale + w + big + most + first;
}

double safe(const std::vector<double>& got, const std::vector<double>& want, double bound, int n) {
  double worst = 0, w = 0;
  int count = 0, steps = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    worst = test::worse(worst, test::abs_error(got[i], want[i]));
    w = test::worse(w, test::relative_to(got[i], want[i], bound));
  }
  // Not errors: counts, sizes, clamps to a constant, minima of indices.
  count = std::max(count, n);
  steps = n > steps ? n : steps;  // nan-safe: ints
  if (n < 0) n = 0;
  const std::size_t most = std::max(got.size(), want.size());
  const double floor = std::fmax(bound, 1e-30);
  return worst + w + count + steps + double(most) + floor;
}
