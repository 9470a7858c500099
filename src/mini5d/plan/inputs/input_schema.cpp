// SPDX-License-Identifier: BSD-3-Clause
// Field lists of the planner's inputs (see input_schema.hpp).
#include "mini5d/plan/inputs/input_schema.hpp"

#include "mini5d/core/deck.hpp"

namespace mini5d::plan {

namespace {
// Planner-only train fields, accepted in model files and decks alike.
const std::vector<std::string> kPlannerTrain = {"global_batch", "precision", "fp32_grad_accum"};

void add_unique(std::vector<std::string>& v, const std::vector<std::string>& more) {
  for (const auto& k : more) {
    bool have = false;
    for (const auto& x : v) have = have || x == k;
    if (!have) v.push_back(k);
  }
}
}  // namespace

const KeySchema& model_file_schema() {
  static const KeySchema s = {
      {"", {"model", "train"}},
      {"model", {"name", "vocab", "vocab_pad_to", "d_model", "layers", "heads", "kv_heads", "seq", "ffn", "experts",
                 "top_k", "tie_embeddings", "attention", "norm", "mlp", "bias", "positions", "rope_theta",
                 "hidden_dropout", "attention_dropout"}},
      {"train", kPlannerTrain},
  };
  return s;
}

const KeySchema& deck_schema() {
  static const KeySchema s = [] {
    KeySchema k;
    for (const auto& [sec, fields] : deck_sections()) {
      k[""].push_back(sec);
      k[sec] = fields;
    }
    add_unique(k["model"], {"name"});
    add_unique(k["train"], kPlannerTrain);
    return k;
  }();
  return s;
}

const KeySchema& cluster_file_schema() {
  static const std::vector<std::string> tier = {"name", "bandwidth_gbs", "latency_us", "curve",
                                                 "gather_curve", "send_curve"};
  static const std::vector<std::string> precs = {"fp32", "bf16", "fp64"};
  static const KeySchema s = {
      {"", {"name", "nodes", "devices_per_node", "cores_per_node", "threads_per_core", "device", "links",
            "slurm", "filesystem", "reliability", "software"}},
      {"filesystem", {"write_gbs_per_node", "write_gbs", "read_gbs_per_node", "read_gbs"}},
      {"reliability", {"node_mtbf_hours", "requeue_s", "startup_s"}},
      {"software", {"name", "tp_overlap", "pp_scatter_gather", "attention_dropout", "attention_block",
                    "fused_attention", "fused_attention_tflops", "collectives", "context_parallel",
                    "grad_reduce_overlap", "overlap_efficiency"}},
      {"device", {"kind", "name", "memory_gib", "reserved_gib", "memory_bandwidth_gbs",
                  "kernel_overhead_us", "peak_tflops", "sustained_tflops", "gemm", "memory_bound"}},
      {"device.peak_tflops", precs},
      {"device.sustained_tflops", precs},
      {"device.gemm", {"model", "source", "call_overhead_us", "table"}},
      {"device.memory_bound", {"elementwise_gbs", "softmax_gbs", "optimizer_gbs", "fixed_us_per_block", "measured",
                               "source"}},
      {"links", {"intra_node", "middle", "inter_node"}},
      {"links.intra_node", tier},
      {"links.middle", {"name", "bandwidth_gbs", "latency_us", "curve", "gather_curve", "send_curve",
                        "nodes_per_group"}},
      {"links.inter_node", {"name", "bandwidth_gbs", "latency_us", "curve", "gather_curve", "send_curve",
                            "oversubscription", "nodes_per_leaf", "rails"}},
      {"slurm", {"partition", "account", "qos", "constraint", "gres", "gpu_bind", "mpi", "binding", "gpu_aware_env",
                 "gpu_aware_lib", "time", "reserved_cores", "threads_per_core"}},
  };
  return s;
}

}  // namespace mini5d::plan
