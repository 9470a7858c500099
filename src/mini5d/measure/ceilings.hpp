// SPDX-License-Identifier: BSD-3-Clause
// The machine's ceilings for the kernel table's roofline: single-precision GEMM rate
// (through the same KokkosBlas::gemm the model calls) and streaming bandwidth (a
// triad, a = b + s c, over arrays far larger than the caches), measured by a short
// micro-benchmark on this rank's execution space (`mini5d ceilings`, about a second)
// and cached in a small JSON file, so a training run only reads them:
//   $MINI5D_CEILINGS, else $XDG_CACHE_HOME/mini5d/ceilings.json, else
//   $HOME/.cache/mini5d/ceilings.json.
// The cache names the host and backend it was measured on. A cache from another host or
// backend, or older than the mini5d binary reading it, is returned marked stale (with
// the reason), and the kernel table then shows no roofline fractions. So does a
// fraction above 100%: a ceiling measured under load is too low, and a kernel cannot
// beat a true one. `mini5d ceilings CLUSTER.yaml` caches a planner cluster
// file's device figures instead (sustained fp32 GEMM rate, memory bandwidth).
#pragma once
#include <optional>
#include <ostream>
#include <string>

namespace mini5d::measure {

struct Ceilings {
  double gemm_gflops = 0;  // sgemm, GFLOP/s
  double stream_gbs = 0;   // triad, GB/s (bytes read + written)
  std::string host, backend, source;  // source: where the figures came from
  std::string stale;  // why the figures cannot be used here (empty: they can)
};

// What to run to replace stale ceilings.
inline const char* kRemeasureCeilings = "re-measure with `mini5d ceilings` on an idle machine";

// Runs the micro-benchmark (collective-free: call it on one rank).
Ceilings measure_ceilings();
std::string ceilings_cache_path();
// The cached ceilings, if any; `stale` says why they do not fit this run (another host
// or backend, or a cache older than this binary).
std::optional<Ceilings> cached_ceilings();
// Writes the cache (creating its folder); throws std::runtime_error naming the path.
void save_ceilings(const Ceilings& c, const std::string& path);
std::string ceilings_json(const Ceilings& c);
// The ceilings a planner cluster file gives its device: sustained (else peak) fp32
// matrix rate and memory bandwidth. Throws std::runtime_error naming the file.
Ceilings ceilings_from_cluster(const std::string& path);

}  // namespace mini5d::measure
