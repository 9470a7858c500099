// SPDX-License-Identifier: BSD-3-Clause
// The machine as the planner sees it: nodes of identical devices, a memory and a
// sustained matrix rate per device, and the link tiers a collective can land on.
//
// Link figures are per device and per direction, as a collective sees them (the "bus
// bandwidth" of nccl-tests / OSU): a ring all-reduce of S bytes over n ranks takes
// 2(n-1) * latency + 2(n-1)/n * S / bandwidth. A tier may carry a measured curve of
// bandwidth against message size (MPICH on one host allocates a temporary per call, so
// 64 MiB messages run at a quarter of the 1 MiB rate); between points the planner
// interpolates in log(size).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "mini5d/plan/cost/precision.hpp"

namespace mini5d::plan {

// The kind of call a bandwidth is asked for: a tier may carry one measured curve per
// kind (`mini5d calibrate` writes all three); a kind without its own uses `curve`.
enum class LinkOp { allreduce, gather, send };  // gather: also reduce-scatter, all-to-all

using BandwidthCurve = std::vector<std::pair<double, double>>;  // (bytes, bytes/s), ascending

struct LinkTier {
  std::string name;        // e.g. "NVLink 4 via NVSwitch"
  double span_devices = 0; // devices reachable inside this tier (aligned block); 0 = all
  double bandwidth = 0;    // bytes/s per device per direction
  double latency = 0;      // seconds per message step
  BandwidthCurve curve;         // all-reduce, and every kind without a curve of its own
  BandwidthCurve gather_curve;  // all-gather / reduce-scatter / all-to-all
  BandwidthCurve send_curve;    // point-to-point
  // The all-reduce may run as a double binary tree (software.collectives: nccl, set on
  // every tier that crosses nodes; comm_model.hpp): the faster of ring and tree.
  bool tree_allreduce = false;
  // Collectives over this tier spread their channels over the NICs of the group's
  // devices on each node (software.collectives: nccl, tiers beyond the node; see
  // collective_link in comm_model.hpp).
  bool nic_channels = false;
  double bandwidth_at(double bytes, LinkOp op = LinkOp::allreduce) const;
  // The bandwidth and every curve point times f (a curve keeps its shape).
  void scale_bandwidth(double f);
};

enum class GemmModel { roofline, flat, measured };

// One measured product (device.gemm.table): op_a op_b ('N' or 'T'), shape, and the
// seconds one call took on the machine (fp32, all ranks of a node running at once).
struct GemmPoint {
  char ta = 'N', tb = 'T';
  double m = 0, n = 0, k = 0, seconds = 0;
};

struct DeviceDesc {
  std::string kind = "gpu";  // gpu | cpu (a CPU "device" is the cores one rank owns)
  std::string name;
  double memory = 0;      // bytes
  double reserved = 0;    // bytes taken by runtime, context, allocator slack
  double hbm_bandwidth = 0;  // bytes/s, for memory-bound kernels and the optimizer
  double kernel_overhead = 5e-6;  // seconds of launch/sync per kernel (small shapes pay it)
  double peak[3] = {0, 0, 0};       // FLOP/s by Precision (fp32, bf16, fp64)
  double sustained[3] = {0, 0, 0};  // FLOP/s a large GEMM reaches
  // How a GEMM's shape sets its time (compute_model.hpp); stated in the cluster file
  // (device.gemm) with the source of its figures.
  GemmModel gemm_model = GemmModel::roofline;
  double gemm_call_overhead = 5e-6;  // seconds per GEMM call
  std::string gemm_source;
  std::vector<GemmPoint> gemm_table;  // model: measured
  // Rates of the memory-bound kernels in the planner's byte counts (time_model.hpp),
  // bytes/s; 0: hbm_bandwidth. device.memory_bound in the cluster file, measured by
  // `mini5d calibrate`; measured rates include the kernels' fixed costs.
  double elementwise_bandwidth = 0, softmax_bandwidth = 0, optimizer_bandwidth = 0;
  bool memory_bound_measured = false;
  // With measured rates: the seconds per block and micro-batch that do not scale with
  // the bytes (launches, per-row work), fitted from two micro-batch sizes; replaces the
  // kernel_overhead-per-kernel charge.
  double memory_bound_fixed = 0;
  std::string memory_bound_source;
  double elementwise_bw() const { return elementwise_bandwidth > 0 ? elementwise_bandwidth : hbm_bandwidth; }
  double softmax_bw() const { return softmax_bandwidth > 0 ? softmax_bandwidth : hbm_bandwidth; }
  double optimizer_bw() const { return optimizer_bandwidth > 0 ? optimizer_bandwidth : hbm_bandwidth; }
  double usable_memory() const { return memory - reserved; }
};

// How the training framework on the cluster communicates (cluster file `software:`).
// The defaults are mini5d's runtime: blocking TP collectives, full boundary sends.
struct SoftwareDesc {
  std::string name = "mini5d";
  // Fraction of the TP all-reduce / all-gather / reduce-scatter time hidden behind the
  // block's GEMMs (0: fully exposed, as in mini5d and Megatron-LM 2021; frameworks
  // that split GEMMs to overlap them reach a fraction of it).
  double tp_overlap = 0;
  // Megatron-LM's scatter/gather for pipeline sends under TP without SP: each tensor
  // rank sends 1/t of the boundary activation over the pipeline link, and the receiving
  // tensor group all-gathers it over its own (intra-node) link.
  bool pp_scatter_gather = false;
  // Dropout on the attention probabilities (GPT-2/Megatron default 0.1; mini5d has
  // none): two more passes over the score matrix each way, plus a 1-byte mask.
  bool attention_dropout = false;
  // Queries per causal block of the attention core: each block's scores are computed
  // against the keys up to its diagonal only, one call per block (mini5d's CPU path:
  // 64, kernels/attention.hpp; `mini5d calibrate` writes it); 0 (the default) is the
  // whole T x T square, masked, as Megatron-LM 2021 and a batched GPU kernel run it.
  // Ring attention (c > 1) is costed as the whole square of its chunk either way.
  int attention_block = 0;
  // The attention core as one fused, memory-efficient kernel (FlashAttention-style, as
  // the GPU training stacks of 2023 on run it): its products at the sustained rate with
  // the causal tiles above the diagonal skipped, the scores never in memory (no softmax
  // or dropout passes over them); backward computes the scores again (compute_model.hpp).
  bool fused_attention = false;
  // The fused core's sustained rate in FLOP/s (software.fused_attention_tflops, counting
  // the causal tiles it computes), in the runs' precision; 0: the sustained GEMM rate.
  // Fused attention kernels reach less of the peak than large GEMMs do.
  double fused_attention_rate = 0;
  // Collective algorithms (software.collectives): "ring" (every collective a ring, the
  // default: MPI libraries' large-message choice and mini5d's calibrated curves) or
  // "nccl" (an all-reduce that crosses nodes takes the faster of a ring and NCCL's
  // double binary tree for its size and rank count; the others stay rings).
  std::string collectives = "ring";
  // How context parallelism moves K/V (software.context_parallel): "ring" (the default,
  // mini5d's runtime: c - 1 hops of K/V blocks, dK/dV travelling back, hidden behind the
  // attention core they feed) or "allgather" (K/V all-gathered before the attention
  // core and dK/dV reduce-scattered after it, on the critical path: Meta's Llama 3 stack,
  // which takes the exposed gather for its simpler masks, small with few K/V heads).
  std::string context_parallel = "ring";
  // Whether the end-of-step gradient reduction (and ZeRO's weight all-gather) overlaps
  // compute (software.grad_reduce_overlap): true, the default, hides it behind the last
  // micro-batch's backward (and the first forward) as frameworks with bucketed,
  // backward-hooked reductions do; false runs it after the last backward, exposed, as
  // Megatron-LM 2021 (train_step all-reduces after the whole pipeline schedule) and
  // DeepSpeed's pipeline engine (ReduceGrads after the schedule's last step) did. Such a
  // framework overlaps no data-parallel traffic: ZeRO-3's gathers are exposed too.
  bool grad_reduce_overlap = true;
  // Fraction of the overlappable communication that compute actually hides (the
  // planner's overlap efficiency, time_model.hpp), as measured by `mini5d calibrate`;
  // < 0: not stated (mini5d-plan's --overlap, default 0.9).
  double overlap_efficiency = -1;
};

struct ClusterDesc {
  std::string name, source;
  SoftwareDesc software;
  long long nodes = 1;
  long long devices_per_node = 1;
  long long cores_per_node = 1;
  DeviceDesc device;
  // Ordered from the fastest/smallest tier to the slowest; the last spans everything.
  std::vector<LinkTier> tiers;
  // Slurm flavour for emit_slurm: site values from the cluster file's `slurm:` section
  // (or mini5d-plan's --slurm-* flags). Empty partition/account/mpi: the site default.
  std::string slurm_partition, slurm_account, slurm_qos, slurm_constraint, slurm_gres;
  // srun's GPU binding when srun binds: one GPU per task, the one nearest its cores.
  std::string slurm_gpu_bind = "single:1";
  std::string slurm_mpi;             // srun --mpi: pmi2 | pmix | none | "" (site default)
  std::string slurm_binding = "srun";  // who pins ranks: srun (--cpu-bind) | mini5d (hwloc)
  std::string slurm_gpu_aware_env;   // NAME=VALUE that turns on GPU-aware MPI, "" if none
  // The library the switch needs linked into mini5d (Cray MPICH's GTL, libmpi_gtl_cuda):
  // the script exports the switch only when the binary links it. "": export always.
  std::string slurm_gpu_aware_lib;
  std::string slurm_time = "01:00:00";
  // Hardware threads per core: Slurm counts each as a CPU, so --cpus-per-task asks for
  // cores x threads_per_core.
  long long threads_per_core = 1;
  // Cores per node the site keeps from jobs (slurm.reserved_cores): Frontier's core
  // specialization (-S 8, its default) and LUMI-G's unallocatable cores, the first of
  // each L3 region. The ranks share the rest, so each keeps to one region.
  long long slurm_reserved_cores = 0;
  // Hardware threads per core a task asks for (slurm.threads_per_core, written as
  // --threads-per-core): with 1, -c counts cores, as Frontier's default does; 0: not
  // written, -c counts threads_per_core CPUs per core (the site's default).
  long long slurm_threads_per_core = 0;
  // Threads per core as --cpus-per-task counts them.
  long long task_threads_per_core() const {
    return slurm_threads_per_core > 0 ? slurm_threads_per_core : threads_per_core;
  }
  // File-system write rate for checkpoints, GB/s: per node (the client's share) and for
  // the whole file system; 0: not stated. Sizes the time-limit warning (signal_margin.hpp).
  double fs_write_gbs_per_node = 0, fs_write_gbs = 0;
  // The same for reading a checkpoint back at a restart (filesystem.read_gbs_per_node,
  // read_gbs); 0: not stated, the write rate stands in.
  double fs_read_gbs_per_node = 0, fs_read_gbs = 0;
  // Failures (cluster file `reliability:`), for the goodput (plan/output/goodput_plan.hpp):
  // one node's mean time between failures that stop a job, hours (0: not stated, no
  // goodput), and the seconds a restart spends before it loads: the scheduler's
  // requeue and the job's start-up.
  double node_mtbf_hours = 0;
  double requeue_s = 60, startup_s = 30;
  long long devices() const { return nodes * devices_per_node; }
};

inline int precision_index(Precision p) { return static_cast<int>(p); }

}  // namespace mini5d::plan
