// SPDX-License-Identifier: BSD-3-Clause
// Shared fixtures for the planner tests: input paths, small hand-made clusters, and the
// search over a shipped model and cluster that the output tests start from.
#pragma once
#include <string>

#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/plan/search/search.hpp"

// The planner's model, layouts and precisions hold the deck's choices
// (rules/deck_choices.hpp), named in the tests as plainly as the planner's own types.
using mini5d::Attention, mini5d::Mlp, mini5d::Norm, mini5d::Positions;
using mini5d::Precision, mini5d::Recompute, mini5d::Schedule;

namespace plan_test {

inline std::string input(const std::string& rel) {
  return std::string(MINI5D_SOURCE_DIR) + "/inputs/" + rel;
}

// Fixed test inputs (tests/plan/data), unlike inputs/ which the runtime tunes.
inline std::string data(const std::string& rel) {
  return std::string(MINI5D_SOURCE_DIR) + "/tests/plan/data/" + rel;
}

// A cluster of `nodes` x `per_node` devices with round numbers, for hand checks;
// `extra` is appended to the file's text (e.g. a software: section).
inline mini5d::plan::ClusterDesc toy_cluster(long long nodes, long long per_node, double mem_gib,
                                             double intra_gbs = 100, double inter_gbs = 10,
                                             const std::string& extra = "") {
  std::string text = "name: toy\nnodes: " + std::to_string(nodes) +
                     "\ndevices_per_node: " + std::to_string(per_node) +
                     "\ndevice:\n  memory_gib: " + std::to_string(mem_gib) +
                     "\n  memory_bandwidth_gbs: 1000\n  peak_tflops: {fp32: 100, bf16: 100}\n"
                     "links:\n  intra_node: {name: fast, bandwidth_gbs: " +
                     std::to_string(intra_gbs) +
                     ", latency_us: 1}\n  inter_node: {name: slow, bandwidth_gbs: " +
                     std::to_string(inter_gbs) + ", latency_us: 5}\n";
  return mini5d::plan::parse_cluster_text(text + extra, "toy.yaml");
}

// The `top` best plans for a shipped model file on a shipped cluster file of `nodes`
// nodes, with what the search was given.
struct Searched {
  mini5d::plan::ModelInput in;
  mini5d::plan::ClusterDesc cl;
  mini5d::plan::SearchOptions o;
  mini5d::plan::SearchResult r;
};
inline Searched search_top(const std::string& model, const std::string& cluster, long long nodes, int top) {
  Searched s{mini5d::plan::load_model_file(input(model)), mini5d::plan::load_cluster_file(input(cluster)), {}, {}};
  s.cl.nodes = nodes;
  s.o.top = top;
  s.r = mini5d::plan::search(s.in.model, s.in.train, s.cl, s.o);
  return s;
}

// The context-parallel toy the ring and all-gather hand counts share: grouped-query
// attention, D 512 in 8 heads of 64 with 2 K/V heads, 2 blocks, T 1024; one bf16
// sequence; t 2, c 4, one micro-batch on one stage. A rank's K/V block is its T/c = 256
// tokens of its one K/V head (64 columns), keys and values: 2 x 256 x 64 x 2 = 65536
// bytes, and its dK/dV in fp32 131072.
struct CpToy {
  mini5d::plan::ModelDesc m;
  mini5d::plan::TrainDesc tr;
  mini5d::plan::Layout l;
  static constexpr double kv = 65536, dkv = 131072;
};
inline CpToy cp_toy() {
  CpToy x;
  x.m.vocab = 1000, x.m.d_model = 512, x.m.heads = 8, x.m.kv_heads = 2, x.m.layers = 2, x.m.seq = 1024,
  x.m.ffn = 2048;
  x.tr.global_batch = 1, x.tr.precision = mini5d::Precision::bf16;
  x.l.t = 2, x.l.c = 4, x.l.d = 1, x.l.micro_batch = 1, x.l.accumulation = 1;
  return x;
}

// The one line a bad cluster file text gets (as file c.yaml), or "" when it loads.
inline std::string cluster_error(const std::string& text) {
  try {
    mini5d::plan::parse_cluster_text(text, "c.yaml");
  } catch (const mini5d::plan::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace plan_test
