// SPDX-License-Identifier: BSD-3-Clause
// The features a valid deck may ask for that this build does not implement, each one
// line blamed on the deck file or the command line (core/deck_blame.hpp).
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"
#include "mini5d/core/deck_blame.hpp"

namespace mini5d {

std::vector<std::string> unsupported_features(const Deck& d) {
  std::vector<std::string> out;
  auto no = [&](const std::string& field, const std::string& value, const std::string& supported) {
    const std::string what = field + "=" + value + ": not implemented in this build (supported: " + supported + ")";
    out.push_back(blamed_origin(d, what) + ": " + what);
  };
  // A tied head sums its gradient with wte's on the whole gradient buffer, which ZeRO 2
  // and 3 do not keep (docs/parallelism.md, tied embeddings).
  if (d.model.tie_embeddings && d.parallel.zero >= 2)
    no("model.tie_embeddings", "true with parallel.zero=" + std::to_string(d.parallel.zero),
       "parallel.zero 0 or 1 with tied embeddings");
  if (d.train.precision == Precision::fp64) no("train.precision", "fp64", "fp32, bf16");
  // bf16 (fp32 master weights) runs every axis with blockwise (or ring) attention
  // (docs/precision.md); full attention has no bf16 path.
  if (d.parallel.grad_reduce_dtype == Precision::bf16 && d.train.precision != Precision::bf16)
    no("parallel.grad_reduce_dtype", std::string("bf16 with train.precision=") + to_string(d.train.precision),
       "fp32, or bf16 with train.precision=bf16");
  if (d.train.precision == Precision::bf16) {
    if (d.model.attention != Attention::blockwise)
      no("model.attention", to_string(d.model.attention), "blockwise with train.precision=bf16");
  }
  return out;
}

}  // namespace mini5d
