// SPDX-License-Identifier: BSD-3-Clause
// Communication bill per axis: payload bytes per call, the collective algorithm's
// volume factor, and the link tier an axis lands on.
//
// Volume factors (bytes each rank puts on the wire per payload byte, ring algorithms):
//   all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n; send 1.
// Time of a call = steps * latency + factor * bytes / bandwidth, with the bandwidth of
// the slowest tier the group crosses (and, where the tier has a measured curve, the
// bandwidth at that message size).
//
// Placement: ranks are ordered [d, p, c, e, t] with t fastest and filled into nodes in
// blocks, so the group of an axis with stride s and degree n spans s*n consecutive
// ranks. It stays inside a tier when the tier's span is a multiple of s*n (e.g. t=8 in
// nodes of 8: intra-node; d=16 with stride 32: across nodes). A layout given with
// map=cyclic deals ranks round-robin instead (cyclic_group_tier).
#pragma once
#include "mini5d/plan/cost/cluster_desc.hpp"
#include "mini5d/plan/cost/layout.hpp"

#include <initializer_list>
#include <optional>

namespace mini5d::plan {

double allreduce_factor(int n);
double allgather_factor(int n);  // also reduce-scatter and all-to-all

// All-reduce: a ring, 2(n-1) latency steps + 2(n-1)/n * S / B; or, on a tier with
// tree_allreduce (software.collectives: nccl), the faster of that and NCCL's double
// binary tree, 2 ceil(log2 n) latency steps (up the tree and down again, pipelined) +
// 2 S / B (NCCL's tuning model: a tree's algorithm bandwidth is half its bus bandwidth,
// 2 bytes on the wire per payload byte against the ring's 2(n-1)/n). B is the tier's bus
// bandwidth either way, the convention nccl-tests reports. The tree wins when latency
// dominates: small messages over many ranks (2 log2 n against 2(n-1) steps).
double ring_allreduce_time(double bytes, int n, const LinkTier& link);
double tree_allreduce_time(double bytes, int n, const LinkTier& link);
// Whether allreduce_time takes the tree for these bytes over this group.
bool allreduce_as_tree(double bytes, int n, const LinkTier& link);
double allreduce_time(double bytes, int n, const LinkTier& link);
double allgather_time(double gathered_bytes, int n, const LinkTier& link);
double reduce_scatter_time(double full_bytes, int n, const LinkTier& link);
double alltoall_time(double bytes_per_rank, int n, const LinkTier& link);
double send_time(double bytes, const LinkTier& link);

// Index into cl.tiers of the tier a group of `n` ranks with rank stride `stride` lives on.
int tier_for_group(const ClusterDesc& cl, long long stride, long long n);
// The same under cyclic mapping (rank r on node r mod nodes, `ranks` ranks in all): the
// first tier when every member shares a node, else the outermost one. A group that
// leaves its node is costed with the slowest link even on clusters with a middle tier
// (rails, pods): which middle-tier unit cyclic members share is not modelled.
int cyclic_group_tier(const ClusterDesc& cl, long long ranks, long long stride, long long n);
// Tier of one axis of the layout under its mapping (-1 when the degree is 1: no traffic).
int axis_tier(const ClusterDesc& cl, const Layout& l, Axis a);
// Tier of the dense-gradient group d*c*e (or the expert group d*c when experts=true).
int gradient_group_tier(const ClusterDesc& cl, const Layout& l, bool experts = false);

// Members of a group (the ranks that differ only along `axes`) on one node, under the
// layout's block mapping; 1 under map=cyclic (members dealt round the nodes: one per
// node unless the group outnumbers the nodes, which is not counted: conservative).
long long members_per_node(const ClusterDesc& cl, const Layout& l, std::initializer_list<Axis> axes);
// The link an all-reduce, all-gather or reduce-scatter of a group with g members per
// node runs over on `tier`. NCCL spreads a collective's channels (rings, trees) over
// the node's NICs, one per device, so the bytes a node puts on the inter-node tier,
// 2(n-1)/n S for an all-reduce, leave through g NICs at once, while each rank's other
// (g-1)/g of its bytes stay on the intra-node hops of its rings: the tier's per-device
// bandwidth times min(g, B_node / (B_tier (1 - 1/g))). Only on tiers with nic_channels
// (software.collectives: nccl beyond the node); elsewhere, and for g = 1, the tier as it
// is: an MPI flat ring puts every rank's bytes through its own link. Not for
// all-to-all, whose off-node bytes leave through each rank's own NIC, nor for sends.
LinkTier collective_link(const ClusterDesc& cl, int tier, long long members_per_node);
// collective_link for the group along `axes` on `tier`; none when tier < 0 (one rank).
std::optional<LinkTier> group_link(const ClusterDesc& cl, const Layout& l, int tier,
                                   std::initializer_list<Axis> axes);
// The same for the dense-gradient group d*c*e (the expert group d*c when experts=true),
// on gradient_group_tier; and that group's members on one node.
std::optional<LinkTier> gradient_group_link(const ClusterDesc& cl, const Layout& l, bool experts = false);
long long gradient_members_per_node(const ClusterDesc& cl, const Layout& l, bool experts = false);

// ---- payloads (bytes per call, per rank) ----------------------------------------
// DP: bytes per gradient element on the wire: the gradient buffer's element (4 for fp32
// main gradients, 2 for bf16 ones), or 2 with a bf16 reduction (bf16_wire).
double grad_wire_bytes(Precision prec, bool fp32_grad_accum, bool bf16_wire);
// DP: the gradient bytes one rank reduces per step (its dense shard before ZeRO).
double dp_reduction_bytes(double params_on_rank, Precision prec, bool fp32_grad_accum = false,
                          bool bf16_wire = false);
// TP: the activation of the tensor group's tokens, all-reduced twice per block forward
// and twice backward (with SP the same volume as all-gather + reduce-scatter pairs).
double tp_allreduce_bytes(double micro_batch, double seq, int c, double d_model, double elem);
// PP: one boundary activation (sequence-split over t with SP).
double pp_boundary_bytes(double micro_batch, double seq, int c, int t, bool sp,
                         double d_model, double elem);
// Seconds of one boundary send between pipeline stages: a send of pp_boundary_bytes
// over the pipeline link, or with Megatron's scatter/gather (software.pp_scatter_gather,
// t > 1 without SP) a send of 1/t of it plus an all-gather over the tensor link.
double pp_send_time(const ClusterDesc& cl, const Layout& l, double micro_batch, double seq,
                    double d_model, double elem);
// CP: one K,V block passed one hop round the ring: the keys and values of the rank's
// T/c tokens at the key width one tensor rank holds (ModelDesc::local_kv_width: with
// grouped-query attention kv_heads heads, not d_model).
double cp_kv_block_bytes(double micro_batch, double seq, int c, double local_kv_width,
                         double elem);
// EP: tokens one rank sends in one all-to-all (dispatch or combine).
double ep_alltoall_bytes(double micro_batch, double seq, int c, int t, bool sp, double d_model,
                         double top_k, double imbalance, double elem);

}  // namespace mini5d::plan
