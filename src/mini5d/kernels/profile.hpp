// SPDX-License-Identifier: BSD-3-Clause
// Per-kernel-family timers with work counts: what the closing summary's kernel table
// and the report's "kernels" record are built from (report/kernel_table.*).
//
// Each kernel wrapper opens a Scope naming its family and the work it does (FLOPs and
// bytes moved, counted once per element read or written, as a roofline wants them);
// the scope fences the default execution space instance on exit, so the time is the
// kernel's and not its launch's. Scopes do not nest: each wraps one leaf kernel (or
// one run of BLAS calls), and what no scope covers is the "other" row (communication,
// data, host work).
//
// Families: gemm (the linear layers' products), attention_gemm (QK^T, PV and their
// gradients), attention (softmax, head permutes), layernorm, gelu, bias, residual,
// cross_entropy, embedding, optimizer (AdamW), norm (gradient sum of squares and clip).
// The timers are on with output.kernel_profile (its default: on for host backends, where
// the fence costs nothing as host kernels are synchronous; off on a GPU, where it
// serialises launches).
#pragma once
#include <array>
#include <chrono>
#include <cstdint>
#include <string>

#include "mini5d/kernels/views.hpp"

namespace mini5d::prof {

enum class Family : int {
  gemm,
  attention_gemm,
  attention,
  layernorm,
  gelu,
  bias,
  residual,
  cross_entropy,
  embedding,
  optimizer,
  norm,
  routing,  // the MoE layer's element-wise kernels: router softmax and top-k, row moves, combine
  convert,  // precision conversions of a bf16 run: widened copies, the working weights' refresh
};
constexpr int kFamilies = 13;

inline const char* family_name(Family f) {
  constexpr const char* names[kFamilies] = {"gemm",     "attention_gemm", "attention", "layernorm",
                                            "gelu",     "bias",           "residual",  "cross_entropy",
                                            "embedding", "optimizer",     "norm",     "routing",
                                            "convert"};
  return names[int(f)];
}
// Matrix products are held to the sgemm ceiling, the rest to the stream bandwidth.
inline bool compute_bound(Family f) { return f == Family::gemm || f == Family::attention_gemm; }

struct Tally {
  double seconds = 0, flops = 0, bytes = 0;
  std::int64_t calls = 0;
};

struct Profile {
  std::array<Tally, kFamilies> tally{};
  bool enabled = true;
  void reset() { tally = {}; }
};

// The process's profile (one rank per process).
inline Profile& profile() {
  static Profile p;
  return p;
}

// A fence that only timing wants: the phase timers (data, forward, backward, reduce,
// optimizer) wait for their kernels with the kernel profile on, so the phases are
// kernel time. Without it a device runs ahead and waits only where MPI or the host
// needs a result (those fences stay) and at the end of the step: the step time is still
// exact, the phase split is then where the host waited.
inline void fence_for_timing(const char* why) {
  if (profile().enabled) fence(why);
}

// Times one leaf kernel (or one run of BLAS calls) of family f doing `flops` and
// moving `bytes`.
class Scope {
 public:
  Scope(Family f, double flops, double bytes) : f_(f), flops_(flops), bytes_(bytes) {
    if (profile().enabled) t0_ = std::chrono::steady_clock::now();
  }
  ~Scope() {
    Profile& p = profile();
    if (!p.enabled) return;
    fence("mini5d::prof::kernel");
    Tally& t = p.tally[std::size_t(f_)];
    t.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    t.flops += flops_;
    t.bytes += bytes_;
    t.calls += 1;
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Family f_;
  double flops_, bytes_;
  std::chrono::steady_clock::time_point t0_{};
};

// A named Kokkos profiling region for one scope, so Kokkos Tools (kernel timer,
// space-time stack) and vendor profilers show the step as a tree of the model's units
// ("mini5d::block3::forward"). Nothing is timed here; without a tool it costs a check.
class Region {
 public:
  explicit Region(const std::string& name) { Kokkos::Profiling::pushRegion(name); }
  ~Region() { Kokkos::Profiling::popRegion(); }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
};

// Work of y[m, n] = op(a)[m, k] op(b)[k, n] (+ beta y): 2mnk FLOPs; bytes read and
// written once (a, b, and y read when beta != 0).
template <class S>
inline void gemm_work(double m, double n, double k, bool beta, double& flops, double& bytes) {
  flops += 2.0 * m * n * k;
  bytes += double(sizeof(S)) * (m * k + k * n + m * n * (beta ? 2.0 : 1.0));
}

}  // namespace mini5d::prof
