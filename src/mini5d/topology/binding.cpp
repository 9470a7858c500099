// SPDX-License-Identifier: BSD-3-Clause
// Core shares (hwloc_distrib's recursion, on plain data so synthetic nodes and tests need
// no hwloc) and their application: CPU binding through hwloc, BLAS and host threads.
#include "mini5d/topology/binding.hpp"

#include <hwloc.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <set>
#include <tuple>

// OpenBLAS's own control; weak so that another BLAS (or none) still links and runs.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace mini5d::topology {
namespace {

using Sets = std::vector<std::vector<int>>;
constexpr int kLevels = 3;  // package, NUMA node, L3 cache; then single cores

int key(const Core& c, int level) { return level == 0 ? c.package : level == 1 ? c.numa : c.l3; }

// hwloc_distrib: give each child of this level a number of ranks proportional to its
// cores (rounded so the totals add up), recurse where a child gets several, and fold a
// child that gets none into the previous share so no core is left out. Fills
// sets[first .. first+n).
void distrib(const NodeTopology& node, const std::vector<int>& cores, int level, int n, Sets& sets,
             int first) {
  std::vector<std::vector<int>> children;
  for (; level < kLevels; ++level) {  // skip levels where everything is in one object
    children.clear();
    for (int c : cores) {
      const Core& core = node.core_list[static_cast<std::size_t>(c)];
      if (children.empty() || key(core, level) != key(node.core_list[static_cast<std::size_t>(children.back().back())], level))
        children.push_back({});
      children.back().push_back(c);
    }
    if (children.size() > 1) break;
  }
  if (level == kLevels) {
    children.clear();
    for (int c : cores) children.push_back({c});
  }
  const long long total = static_cast<long long>(cores.size());
  long long given_weight = 0;
  int given = 0;
  for (const auto& child : children) {
    const long long w = static_cast<long long>(child.size());
    auto upto = [&](long long weight) { return static_cast<int>((weight * n + total - 1) / total); };
    const int chunk = upto(given_weight + w) - upto(given_weight);
    if (chunk == 0) {  // the first child always gets >= 1, so given > 0 here
      auto& prev = sets[static_cast<std::size_t>(first + given - 1)];
      prev.insert(prev.end(), child.begin(), child.end());
    } else if (chunk == 1 || child.size() == 1) {
      for (int j = 0; j < chunk; ++j) sets[static_cast<std::size_t>(first + given + j)] = child;
    } else {
      distrib(node, child, level + 1, chunk, sets, first + given);
    }
    given += chunk;
    given_weight += w;
  }
}

// Cores in hierarchy order, so that every package/NUMA/L3 is one contiguous run.
std::vector<int> ordered(const NodeTopology& node, std::vector<int> cores) {
  std::sort(cores.begin(), cores.end(), [&](int a, int b) {
    const Core &x = node.core_list[static_cast<std::size_t>(a)], &y = node.core_list[static_cast<std::size_t>(b)];
    return std::tie(x.package, x.numa, x.l3, x.index) < std::tie(y.package, y.numa, y.l3, y.index);
  });
  return cores;
}

Sets shares(const NodeTopology& node, const std::vector<int>& cores, int n) {
  Sets sets(static_cast<std::size_t>(n));
  distrib(node, ordered(node, cores), 0, n, sets, 0);
  for (auto& s : sets) std::sort(s.begin(), s.end());
  return sets;
}

std::string plural(int k, const char* what) { return std::to_string(k) + " " + what + (k == 1 ? "" : "s"); }

}  // namespace

NodeBindings distribute(const NodeTopology& node, int n) {
  NodeBindings out;
  if (n < 1 || node.core_list.empty()) return out;
  std::vector<int> all(node.core_list.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  out.ranks.resize(static_cast<std::size_t>(n));
  for (int l = 0; l < n; ++l) out.ranks[static_cast<std::size_t>(l)].local_rank = l;

  const int gpus = static_cast<int>(node.gpus.size());
  // GPU localities usable for placement: known, and either equal or disjoint.
  bool by_gpu = gpus > 0;
  for (int a = 0; a < gpus && by_gpu; ++a) {
    const auto& la = node.gpus[static_cast<std::size_t>(a)].near_cores;
    if (la.empty()) by_gpu = false;
    for (int b = 0; b < a && by_gpu; ++b) {
      const auto& lb = node.gpus[static_cast<std::size_t>(b)].near_cores;
      std::vector<int> common;
      std::set_intersection(la.begin(), la.end(), lb.begin(), lb.end(), std::back_inserter(common));
      if (!common.empty() && la != lb) by_gpu = false;
    }
  }
  if (gpus > 0) {
    // Consecutive local ranks share a GPU (n >= gpus); fewer ranks than GPUs spread over
    // them, as over packages, so they land near different cores.
    for (int l = 0; l < n; ++l) out.ranks[static_cast<std::size_t>(l)].gpu = l * gpus / n;
    if (n > gpus) out.notes.push_back(plural(n, "rank") + " share " + plural(gpus, "GPU"));
    if (n < gpus) out.notes.push_back(plural(gpus - n, "GPU") + " unused (" + plural(n, "rank") + ")");
  }

  Sets sets(static_cast<std::size_t>(n));
  if (by_gpu) {
    // Each distinct locality's cores go to the ranks whose GPU sits there.
    std::vector<int> used;
    std::set<std::vector<int>> done;
    for (int l = 0; l < n; ++l) {
      const auto& near = node.gpus[static_cast<std::size_t>(out.ranks[static_cast<std::size_t>(l)].gpu)].near_cores;
      if (!done.insert(near).second) continue;
      std::vector<int> members;
      for (int k = 0; k < n; ++k)
        if (node.gpus[static_cast<std::size_t>(out.ranks[static_cast<std::size_t>(k)].gpu)].near_cores == near)
          members.push_back(k);
      const Sets part = shares(node, near, static_cast<int>(members.size()));
      for (std::size_t i = 0; i < members.size(); ++i) sets[static_cast<std::size_t>(members[i])] = part[i];
      used.insert(used.end(), near.begin(), near.end());
    }
    if (used.size() < all.size()) {
      std::vector<int> idle;
      std::sort(used.begin(), used.end());
      std::set_difference(all.begin(), all.end(), used.begin(), used.end(), std::back_inserter(idle));
      out.notes.push_back("cores " + format_list(idle) + " are near no rank's GPU and stay idle");
    }
  } else {
    if (gpus > 0) out.notes.push_back("GPU locality unknown or overlapping: cores spread over the whole node");
    sets = shares(node, all, n);
  }

  for (int l = 0; l < n; ++l) {
    Binding& b = out.ranks[static_cast<std::size_t>(l)];
    b.cores = sets[static_cast<std::size_t>(l)];
    for (int c : b.cores) {
      const auto& pus = node.core_list[static_cast<std::size_t>(c)].pus;
      b.pus.insert(b.pus.end(), pus.begin(), pus.end());
    }
    std::sort(b.pus.begin(), b.pus.end());
    b.sharers = static_cast<int>(std::count_if(sets.begin(), sets.end(), [&](const auto& s) { return s == b.cores; }));
  }
  if (n > static_cast<int>(all.size()))
    out.notes.push_back(plural(n, "rank") + " share " + plural(static_cast<int>(all.size()), "core") +
                        ": oversubscribed, 1 BLAS thread each");
  return out;
}

std::string format_binding(const NodeTopology& node, const Binding& b) {
  std::vector<int> packages, numas;
  for (int c : b.cores) {
    packages.push_back(node.core_list[static_cast<std::size_t>(c)].package);
    numas.push_back(node.core_list[static_cast<std::size_t>(c)].numa);
  }
  std::string s = (b.cores.size() == 1 ? "core " : "cores ") + format_list(b.cores) +
                  (b.pus.size() == 1 ? " (PU " : " (PUs ") + format_list(b.pus) + "), package " +
                  format_list(packages) + ", NUMA " + format_list(numas);
  if (b.gpu >= 0)
    s += ", gpu " + std::to_string(b.gpu) + " " + node.gpus[static_cast<std::size_t>(b.gpu)].name;
  if (b.sharers > 1) s += ", shared by " + std::to_string(b.sharers) + " ranks";
  return s;
}

BindReport bind_this_rank(const NodeTopology& node, const NodeMembership& m, const BindOptions& opt) {
  BindReport r;
  // Virtual nodes on one real machine share its cores; on a synthetic node each virtual
  // node is a whole stand-in node.
  const bool host = m.virtual_nodes && !node.synthetic;
  const int local = host ? m.host_local_rank : m.local_rank, count = host ? m.host_local_size : m.local_size;
  const NodeBindings nb = distribute(node, count);
  if (nb.ranks.empty()) {
    r.notes.push_back("no cores found: not bound");
    return r;
  }
  r.binding = nb.ranks[static_cast<std::size_t>(local)];
  r.notes = nb.notes;
  if (host && m.host_local_size != m.local_size)
    r.notes.push_back("virtual nodes: this machine's cores are shared out among its " +
                      plural(m.host_local_size, "rank"));
  const int owned = std::max(1, r.binding.sharers > 1 ? 1 : static_cast<int>(r.binding.cores.size()));

  // 1. CPU binding. A synthetic node is a stand-in: its numbers are not this machine's.
  const char* no_bind = std::getenv(kNoBindEnv);
  if (node.synthetic) {
    r.notes.push_back("synthetic topology: binding computed, not applied");
  } else if (!opt.bind_process) {
    r.notes.push_back("binding computed, not applied (disabled by the caller)");
  } else if (no_bind && std::strcmp(no_bind, "1") == 0) {
    r.launcher_binds = true;
    r.notes.push_back(std::string(kNoBindEnv) + "=1: binding computed, not applied");
  } else {
    hwloc_topology_t t;
    hwloc_topology_init(&t);
    hwloc_topology_load(t);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    for (int pu : r.binding.pus) hwloc_bitmap_set(set, static_cast<unsigned>(pu));
    // PROCESS: every thread, including a BLAS pool that already exists.
    int rc = hwloc_set_cpubind(t, set, HWLOC_CPUBIND_PROCESS);
    if (rc != 0) rc = hwloc_set_cpubind(t, set, 0);
    const int err = errno;
    hwloc_bitmap_free(set);
    hwloc_topology_destroy(t);
    r.bound = rc == 0;
    r.notes.push_back(r.bound ? "bound to PUs " + format_list(r.binding.pus)
                              : "binding to PUs " + format_list(r.binding.pus) + " failed: " + std::strerror(err));
  }

  // 2. BLAS threads = cores owned, unless the user chose.
  const std::string want = std::to_string(owned);
  if (const char* user = std::getenv("OPENBLAS_NUM_THREADS"); user && *user) {
    r.blas_threads = std::atoi(user);
    r.notes.push_back(std::string("OPENBLAS_NUM_THREADS=") + user + " set by the user: kept (this rank owns " +
                      plural(owned, "core") + ")");
  } else if (node.synthetic || !opt.set_blas_threads) {
    r.blas_threads = owned;
    r.notes.push_back("BLAS threads not set (would be " + want + ")");
  } else if (openblas_set_num_threads) {
    openblas_set_num_threads(owned);
    r.blas_threads = owned;
    r.notes.push_back("OpenBLAS threads set to " + want + " (cores owned)");
  } else {
    r.blas_threads = owned;
    r.notes.push_back("BLAS is not OpenBLAS: set its thread count to " + want + " yourself");
  }

  // 3. Kokkos host threads. Only an OpenMP backend has a pool, sized at initialisation.
  // The OpenMP runtime read its environment when the program loaded, so the thread
  // count goes to Kokkos as an argument (host_threads); the environment is set too, for
  // Kokkos's own checks and any other OpenMP code started later.
#if defined(KOKKOS_ENABLE_OPENMP)
  if (const char* user = std::getenv("OMP_NUM_THREADS"); user && *user) {
    r.notes.push_back(std::string("OMP_NUM_THREADS=") + user + " set by the user: kept");
  } else if (!node.synthetic && opt.set_blas_threads && !Kokkos::is_initialized()) {
    setenv("OMP_NUM_THREADS", want.c_str(), 0);
    r.host_threads = owned;
    r.notes.push_back("Kokkos OpenMP threads: " + want + " (cores owned)");
  } else {
    r.notes.push_back("Kokkos OpenMP: set OMP_NUM_THREADS=" + want + " (its pool is sized at initialisation)");
  }
  // The rank is bound to its cores and its threads move freely inside them: that is
  // OMP_PROC_BIND=false, which Kokkos is told (else it warns that the variable is unset).
  if (const char* user = std::getenv("OMP_PROC_BIND"); user && *user) {
    r.notes.push_back(std::string("OMP_PROC_BIND=") + user + " set by the user: kept");
  } else if (r.bound && !Kokkos::is_initialized()) {
    setenv("OMP_PROC_BIND", "false", 0);
    r.notes.push_back("OMP_PROC_BIND=false: threads float inside the rank's cores");
  }
#else
  r.notes.push_back(std::string("Kokkos host backend ") + Kokkos::DefaultHostExecutionSpace::name() +
                    ": no host thread pool to size");
#endif
  return r;
}

}  // namespace mini5d::topology
