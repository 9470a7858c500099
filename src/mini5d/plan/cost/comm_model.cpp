// SPDX-License-Identifier: BSD-3-Clause
// Collective cost formulas and tier placement (see comm_model.hpp).
#include "mini5d/plan/cost/comm_model.hpp"

#include <algorithm>
#include <cmath>

namespace mini5d::plan {

double allreduce_factor(int n) { return n <= 1 ? 0.0 : 2.0 * (n - 1) / n; }
double allgather_factor(int n) { return n <= 1 ? 0.0 : double(n - 1) / n; }

double ring_allreduce_time(double bytes, int n, const LinkTier& link) {
  if (n <= 1 || bytes <= 0) return 0;
  return 2.0 * (n - 1) * link.latency + allreduce_factor(n) * bytes / link.bandwidth_at(bytes);
}

double tree_allreduce_time(double bytes, int n, const LinkTier& link) {
  if (n <= 1 || bytes <= 0) return 0;
  return 2.0 * std::ceil(std::log2(double(n))) * link.latency + 2.0 * bytes / link.bandwidth_at(bytes);
}

bool allreduce_as_tree(double bytes, int n, const LinkTier& link) {
  return link.tree_allreduce && tree_allreduce_time(bytes, n, link) < ring_allreduce_time(bytes, n, link);
}

double allreduce_time(double bytes, int n, const LinkTier& link) {
  return allreduce_as_tree(bytes, n, link) ? tree_allreduce_time(bytes, n, link) : ring_allreduce_time(bytes, n, link);
}

double allgather_time(double gathered_bytes, int n, const LinkTier& link) {
  if (n <= 1 || gathered_bytes <= 0) return 0;
  return (n - 1.0) * link.latency +
         allgather_factor(n) * gathered_bytes / link.bandwidth_at(gathered_bytes, LinkOp::gather);
}

double reduce_scatter_time(double full_bytes, int n, const LinkTier& link) {
  return allgather_time(full_bytes, n, link);
}

double alltoall_time(double bytes_per_rank, int n, const LinkTier& link) {
  if (n <= 1 || bytes_per_rank <= 0) return 0;
  return (n - 1.0) * link.latency +
         allgather_factor(n) * bytes_per_rank / link.bandwidth_at(bytes_per_rank, LinkOp::gather);
}

double send_time(double bytes, const LinkTier& link) {
  if (bytes <= 0) return 0;
  return link.latency + bytes / link.bandwidth_at(bytes, LinkOp::send);
}

int tier_for_group(const ClusterDesc& cl, long long stride, long long n) {
  if (n <= 1) return -1;
  const double extent = double(stride) * double(n);
  const int last = int(cl.tiers.size()) - 1;
  for (int i = 0; i < last; ++i) {
    const double span = cl.tiers[i].span_devices;
    if (span >= extent && static_cast<long long>(span) % static_cast<long long>(extent) == 0)
      return i;
  }
  return last;
}

int cyclic_group_tier(const ClusterDesc& cl, long long ranks, long long stride, long long n) {
  if (n <= 1) return -1;
  const long long per_node = std::max<long long>(1, cl.devices_per_node);
  const long long nodes = (ranks + per_node - 1) / per_node;
  // Members r0 + k*stride sit on nodes (r0 + k*stride) mod nodes: all on r0's node when
  // the stride is a multiple of the node count, else at least two nodes.
  if (nodes <= 1 || stride % nodes == 0) return 0;
  return int(cl.tiers.size()) - 1;
}

int axis_tier(const ClusterDesc& cl, const Layout& l, Axis a) {
  if (l.mapping == Mapping::cyclic) return cyclic_group_tier(cl, l.ranks(), axis_stride(l, a), axis_degree(l, a));
  return tier_for_group(cl, axis_stride(l, a), axis_degree(l, a));
}

int gradient_group_tier(const ClusterDesc& cl, const Layout& l, bool experts) {
  int t = -1;
  t = std::max(t, axis_tier(cl, l, Axis::d));
  t = std::max(t, axis_tier(cl, l, Axis::c));
  if (!experts) t = std::max(t, axis_tier(cl, l, Axis::e));
  return t;
}

long long members_per_node(const ClusterDesc& cl, const Layout& l, std::initializer_list<Axis> axes) {
  if (l.mapping == Mapping::cyclic) return 1;
  const long long on_node = std::min<long long>(std::max<long long>(1, cl.devices_per_node), l.ranks());
  long long members = 0;
  for (long long r = 0; r < on_node; ++r) {  // rank 0's group on node 0: the others index 0
    bool member = true;
    for (Axis a : {Axis::d, Axis::p, Axis::c, Axis::e, Axis::t}) {
      if (std::find(axes.begin(), axes.end(), a) != axes.end()) continue;
      if ((r / axis_stride(l, a)) % axis_degree(l, a) != 0) member = false;
    }
    members += member;
  }
  return std::max<long long>(1, members);
}

LinkTier collective_link(const ClusterDesc& cl, int tier, long long members_per_node) {
  LinkTier link = cl.tiers[std::size_t(tier)];
  const double g = double(members_per_node);
  if (tier == 0 || !link.nic_channels || g <= 1 || link.bandwidth <= 0) return link;
  const double node = cl.tiers[0].bandwidth / (link.bandwidth * (1 - 1 / g));
  link.scale_bandwidth(std::min(g, node));
  return link;
}

std::optional<LinkTier> group_link(const ClusterDesc& cl, const Layout& l, int tier,
                                   std::initializer_list<Axis> axes) {
  if (tier < 0) return std::nullopt;
  return collective_link(cl, tier, members_per_node(cl, l, axes));
}

namespace {
const std::initializer_list<Axis> kDenseAxes = {Axis::d, Axis::c, Axis::e}, kExpertAxes = {Axis::d, Axis::c};
}  // namespace

std::optional<LinkTier> gradient_group_link(const ClusterDesc& cl, const Layout& l, bool experts) {
  return group_link(cl, l, gradient_group_tier(cl, l, experts), experts ? kExpertAxes : kDenseAxes);
}

long long gradient_members_per_node(const ClusterDesc& cl, const Layout& l, bool experts) {
  return members_per_node(cl, l, experts ? kExpertAxes : kDenseAxes);
}

double grad_wire_bytes(Precision prec, bool fp32_grad_accum, bool bf16_wire) {
  return bf16_wire ? 2.0 : state_bytes_per_param(prec, fp32_grad_accum).grad;
}

double dp_reduction_bytes(double params_on_rank, Precision prec, bool fp32_grad_accum, bool bf16_wire) {
  return params_on_rank * grad_wire_bytes(prec, fp32_grad_accum, bf16_wire);
}

double tp_allreduce_bytes(double micro_batch, double seq, int c, double d_model, double elem) {
  return micro_batch * seq / c * d_model * elem;
}

double pp_boundary_bytes(double micro_batch, double seq, int c, int t, bool sp, double d_model,
                         double elem) {
  return micro_batch * seq / c * d_model * elem / (sp ? t : 1);
}

double pp_send_time(const ClusterDesc& cl, const Layout& l, double micro_batch, double seq,
                    double d_model, double elem) {
  const int tp = axis_tier(cl, l, Axis::p);
  if (tp < 0) return 0;
  const LinkTier& lp = cl.tiers[std::size_t(tp)];
  const double full = pp_boundary_bytes(micro_batch, seq, l.c, l.t, l.sp, d_model, elem);
  const int tt = axis_tier(cl, l, Axis::t);
  if (!cl.software.pp_scatter_gather || l.t == 1 || l.sp || tt < 0) return send_time(full, lp);
  return send_time(full / l.t, lp) + allgather_time(full, l.t, cl.tiers[std::size_t(tt)]);
}

double cp_kv_block_bytes(double micro_batch, double seq, int c, double local_kv_width,
                         double elem) {
  return 2.0 * micro_batch * seq / c * local_kv_width * elem;
}

double ep_alltoall_bytes(double micro_batch, double seq, int c, int t, bool sp, double d_model,
                         double top_k, double imbalance, double elem) {
  return top_k * imbalance * micro_batch * seq / c * d_model * elem / (sp ? t : 1);
}

}  // namespace mini5d::plan
