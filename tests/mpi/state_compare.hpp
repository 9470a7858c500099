// SPDX-License-Identifier: BSD-3-Clause
// The whole training state of a run (weights and both AdamW moments) as per-tensor
// checksums (train::state_checksums), compared between runs and sent to every rank.
// The resume checks use it twice: the state a layout reads back must equal the saving
// layout's exactly (the file holds the same floats; only the double summation order
// differs), and the single-rank run's within round-off. The position-weighted sum is
// what catches a permutation inside a tensor (two ranks' shards swapped, rows read back
// in another order), which keeps the sum of squares.
#pragma once
#include <mpi.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>

#include "mini5d/train/param_checksum.hpp"
#include "compare.hpp"
#include "mpi_util.hpp"

namespace mini5d::test {

// Part ("model", "optimizer/exp_avg", "optimizer/exp_avg_sq") -> tensor -> checksum.
using StateChecksums = std::map<std::string, std::map<std::string, train::TensorChecksum>>;

// The worst relative difference over every part and tensor of each measure: the sum of
// squares against itself, the weighted sum against sqrt(sum_k k^2 * sum of squares),
// its largest possible value by Cauchy-Schwarz (a weighted sum near 0 has no scale of
// its own), each with the part and tensor where it is worst (empty: all equal). Infinite when a part or
// tensor is missing, extra or of another size, or a value is not finite.
struct StateDifference {
  double sum_sq = 0, weighted = 0;
  std::string sum_sq_at, weighted_at;
};
inline StateDifference state_difference(const StateChecksums& want, const StateChecksums& got) {
  StateDifference out;
  auto missing = [&](const std::string& what) {
    return StateDifference{kNotFinite, kNotFinite, what + " (missing)", what + " (missing)"};
  };
  if (got.size() != want.size() || want.empty()) return missing("a part");
  // Records e at `at` when it is the worst so far (none while every difference is 0);
  // worse() made a NaN +inf, which is.
  auto keep = [](double& worst, std::string& worst_at, double e, const std::string& at) {
    if (worst < worse(worst, e)) worst_at = at;
    worst = worse(worst, e);
  };
  for (const auto& [part, tensors] : want) {
    const auto g = got.find(part);
    if (g == got.end() || g->second.size() != tensors.size()) return missing(part);
    for (const auto& [name, c] : tensors) {
      const auto t = g->second.find(name);
      if (t == g->second.end() || t->second.elements != c.elements) return missing(part + "/" + name);
      const double n = double(c.elements);
      const double e_sq = relative_to(t->second.sum_sq, c.sum_sq, c.sum_sq);
      const double e_w =
          relative_to(t->second.weighted, c.weighted, std::sqrt(n * (n + 1) * (2 * n + 1) / 6 * c.sum_sq));
      keep(out.sum_sq, out.sum_sq_at, e_sq, part + "/" + name);
      keep(out.weighted, out.weighted_at, e_w, part + "/" + name);
    }
  }
  return out;
}

// `s` as held on world rank `root`, on every rank (collective over the world). Sent as
// text with 17 significant digits, which gives each double back exactly. The root has
// usually just computed `s` alone: the other ranks sleep until it comes (idle_barrier).
inline StateChecksums broadcast_state(const StateChecksums& s, int root) {
  idle_barrier();
  std::string text;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == root) {
    std::ostringstream out;
    out.precision(17);
    for (const auto& [part, tensors] : s)
      for (const auto& [name, c] : tensors)
        out << part << ' ' << name << ' ' << c.sum << ' ' << c.sum_sq << ' ' << c.weighted << ' ' << c.elements << '\n';
    text = out.str();
  }
  long size = long(text.size());
  MPI_Bcast(&size, 1, MPI_LONG, root, MPI_COMM_WORLD);
  text.resize(std::size_t(size));
  MPI_Bcast(text.data(), int(size), MPI_CHAR, root, MPI_COMM_WORLD);
  StateChecksums out;
  std::istringstream in(text);
  std::string part, name;
  train::TensorChecksum c;
  while (in >> part >> name >> c.sum >> c.sum_sq >> c.weighted >> c.elements) out[part][name] = c;
  return out;
}

}  // namespace mini5d::test
