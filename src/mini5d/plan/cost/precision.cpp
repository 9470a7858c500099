// SPDX-License-Identifier: BSD-3-Clause
// Per-precision byte counts (see precision.hpp for the table and its sources).
#include "mini5d/plan/cost/precision.hpp"

namespace mini5d::plan {

StateBytesPerParam state_bytes_per_param(Precision p, bool fp32_grad_accum) {
  StateBytesPerParam b;
  switch (p) {
    case Precision::fp32:
      b.weight = 4, b.grad = 4, b.master = 0, b.moments = 8;
      break;
    case Precision::bf16:
      // The bf16 weight is a copy; the fp32 master is what AdamW updates.
      b.weight = 2, b.grad = fp32_grad_accum ? 4 : 2, b.master = 4, b.moments = 8;
      break;
    case Precision::fp64:
      b.weight = 8, b.grad = 8, b.master = 0, b.moments = 16;
      break;
  }
  return b;
}

double activation_elem_bytes(Precision p) {
  switch (p) {
    case Precision::fp32: return 4;
    case Precision::bf16: return 2;
    case Precision::fp64: return 8;
  }
  return 4;
}

const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::bf16: return "bf16";
    case Precision::fp64: return "fp64";
  }
  return "?";
}

bool parse_precision(const std::string& s, Precision& out) {
  if (s == "fp32") return out = Precision::fp32, true;
  if (s == "bf16") return out = Precision::bf16, true;
  if (s == "fp64") return out = Precision::fp64, true;
  return false;
}

}  // namespace mini5d::plan
