// SPDX-License-Identifier: BSD-3-Clause
// One candidate layout (the five degrees and the knobs that go with them) and the
// rules that make it valid (docs/parallelism.md).
//
// Rank order is [d, p, c, e, t] with t fastest and ranks placed on nodes in blocks, so
// an axis's group is ranks {r0 + k*stride}: stride 1 for t, t for e, t*e for c,
// t*e*c for p and t*e*c*p for d. Pipeline micro-batches per step are the gradient
// accumulation steps: global_batch = micro_batch * accumulation * d * e.
#pragma once
#include <string>
#include <vector>

#include "mini5d/plan/cost/cluster_desc.hpp"
#include "mini5d/plan/cost/model_desc.hpp"
#include "mini5d/rules/pipeline_schedule.hpp"
#include "mini5d/rules/stage_split.hpp"

namespace mini5d::plan {

enum class Recompute { none, selective, full };
enum class Schedule { gpipe, one_f_one_b, interleaved };
// How ranks are dealt to nodes. block: ranks 0..k-1 on the first node (mpiexec's and
// srun's default, what the search assumes). cyclic: rank r on node r mod nodes (Hydra's
// round-robin, srun --distribution=cyclic), which puts a stride-1 group such as t across
// nodes and a group whose stride is a multiple of the node count inside one.
enum class Mapping { block, cyclic };

const char* to_string(Recompute r);
const char* to_string(Schedule s);
const char* to_string(Mapping m);
bool parse_recompute(const std::string& s, Recompute& out);
// Accepts the deck's spellings: 1f1b, gpipe, interleaved.
bool parse_schedule(const std::string& s, Schedule& out);

struct Layout {
  int d = 1, t = 1, p = 1, c = 1, e = 1;
  int micro_batch = 1;
  int accumulation = 1;  // micro-batches per step (= pipeline micro-batches m)
  int zero = 0;
  Recompute recompute = Recompute::none;
  int virtual_stages = 1;  // > 1: interleaved 1F1B
  bool sp = false;         // sequence parallelism inside the tensor group
  Schedule schedule = Schedule::one_f_one_b;
  // How the blocks are cut into stages (rules/stage_split.hpp, the runtime's rule).
  StageLayers stage_layers;
  Mapping mapping = Mapping::block;  // only --layout map=cyclic sets cyclic
  long long ranks() const { return 1LL * d * t * p * c * e; }
  // ZeRO shards dense state over every rank holding the same dense shard.
  int dense_group() const { return d * c * e; }
  int expert_group() const { return d * c; }
};

// The runtime's pipeline schedule kind for the layout's schedule (rules/pipeline_schedule.hpp).
pp::Kind pp_kind(const Layout& l);

enum class Axis { d, p, c, e, t };
const char* axis_name(Axis a);
// Rank stride of an axis in the [d,p,c,e,t] order.
long long axis_stride(const Layout& l, Axis a);
int axis_degree(const Layout& l, Axis a);

struct RuleOptions {
  bool allow_cross_node_tp = false;
  bool skip_redundant = true;  // drop knobs that change nothing (ZeRO over a group of 1, ...)
};

// Every rule the layout breaks, one short sentence each; empty when valid.
std::vector<std::string> check_layout(const ModelDesc& m, const TrainDesc& tr,
                                      const ClusterDesc& cl, const Layout& l,
                                      const RuleOptions& opt = {});

// Blocks per virtual stage (p * virtual_stages entries): l.stage_layers, or the
// balanced split (rules/stage_split.hpp) the runtime computes the same way. moe_every:
// the runtime's MoE spacing (planner model files have every block MoE).
std::vector<long long> layout_split(const ModelDesc& m, const Layout& l, int moe_every = 1);
// Blocks pipeline stage `stage` holds: its v chunks of layout_split.
double stage_block_count(const ModelDesc& m, const Layout& l, int stage);
// The even cut (auto where p*v divides the layers): every stage layers/p blocks.
bool even_split(const ModelDesc& m, const Layout& l);
// One stage of each kind the costs can tell apart: the first, the last, and the first
// middle stage holding each distinct list of chunk sizes (ascending). The slowest and
// the fullest stage are among them.
std::vector<int> distinct_stages(const ModelDesc& m, const Layout& l);

std::string describe(const Layout& l);  // "d=16 t=8 p=4 c=1 e=1 mb=1 m=64 ZeRO-1 ..."

}  // namespace mini5d::plan
