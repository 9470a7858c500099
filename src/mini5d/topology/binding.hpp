// SPDX-License-Identifier: BSD-3-Clause
// Binding: which cores each rank of a node owns, and making it so. `distribute` is the
// pure part (hwloc_distrib's algorithm on NodeTopology: ranks spread evenly over
// packages, NUMA nodes and L3 caches, whole cores each, near their GPU when the node has
// GPUs). `bind_this_rank` binds the calling process to its share and sizes the BLAS
// thread pool to the cores it owns, so ranks never oversubscribe the node.
#pragma once
#include <string>
#include <vector>

#include "mini5d/topology/membership.hpp"
#include "mini5d/topology/node.hpp"

namespace mini5d::topology {

// Environment variable: "1" leaves the process where the launcher put it.
inline constexpr const char* kNoBindEnv = "MINI5D_NO_BIND";

struct Binding {
  int local_rank = 0;
  std::vector<int> cores;  // logical core indices this rank owns (shares when sharers > 1)
  std::vector<int> pus;    // OS indices of their PUs: the CPU set it is bound to
  int gpu = -1;            // index into NodeTopology::gpus, -1 when the node has none
  int sharers = 1;         // ranks bound to exactly these cores (> 1 only when ranks > cores)
};

struct NodeBindings {
  std::vector<Binding> ranks;      // one per local rank, in local-rank order
  std::vector<std::string> notes;  // e.g. "8 ranks share 4 cores"
};

// Pure. The shares of `ranks_on_node` ranks (>= 1). With ranks <= cores the shares are
// disjoint and together cover every core (or, with GPUs, every core near a used GPU).
NodeBindings distribute(const NodeTopology& node, int ranks_on_node);

struct BindOptions {
  bool bind_process = true;      // hwloc_set_cpubind; also off when MINI5D_NO_BIND=1
  bool set_blas_threads = true;  // openblas_set_num_threads, unless the user set OPENBLAS_NUM_THREADS
};

struct BindReport {
  Binding binding;
  bool bound = false;
  bool launcher_binds = false;  // MINI5D_NO_BIND=1: the launcher pinned the rank (and picks its GPU)
  int blas_threads = 0;  // what the BLAS will use (as set, or as the user set it)
  int host_threads = 0;  // Kokkos OpenMP threads to ask for at initialisation; 0: Kokkos decides
  std::vector<std::string> notes;  // binding, BLAS and host-thread decisions, for the header
};

// Computes this rank's share from its node membership and applies it (see BindOptions).
// A synthetic topology is never applied: it is not this machine.
BindReport bind_this_rank(const NodeTopology& node, const NodeMembership& m, const BindOptions& opt = {});

// "cores 0-3 (PUs 0-3,64-67), package 0, NUMA 0, gpu 0 cuda0"
std::string format_binding(const NodeTopology& node, const Binding& b);

}  // namespace mini5d::topology
