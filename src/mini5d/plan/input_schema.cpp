// SPDX-License-Identifier: BSD-3-Clause
// Field lists of the planner's inputs (see input_schema.hpp).
#include "mini5d/plan/input_schema.hpp"

namespace mini5d::plan {

namespace {
// core/deck.cpp's schema, section by section (tests/test_plan_schema.cpp keeps it equal).
const std::vector<std::pair<std::string, std::vector<std::string>>>& runtime_sections() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> s = {
      {"model", {"vocab", "d_model", "layers", "heads", "seq", "ffn", "experts", "top_k",
                 "moe_every", "capacity_factor", "tie_embeddings"}},
      {"parallel", {"d", "t", "p", "c", "e", "zero", "virtual_stages", "schedule",
                    "ranks_per_node", "gpu_aware_mpi", "sp", "bucket_mb",
                    "collective_timeout_s", "force_placement"}},
      {"train", {"steps", "micro_batch", "accumulation", "seed", "lr", "min_lr", "warmup",
                 "weight_decay", "beta1", "beta2", "eps", "grad_clip", "aux_loss_coef",
                 "max_skipped", "spike_factor", "allow_oversubscribe_memory", "recompute",
                 "activation_budget_mib", "precision"}},
      {"data", {"source", "path", "seed", "markov_order", "markov_branching"}},
      {"checkpoint", {"dir", "every", "at_end", "keep", "resume", "overwrite"}},
      {"output", {"log_every", "report", "trace"}},
  };
  return s;
}

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
      {"model", {"name", "vocab", "d_model", "layers", "heads", "seq", "ffn", "experts",
                 "top_k", "tie_embeddings"}},
      {"train", kPlannerTrain},
  };
  return s;
}

const KeySchema& deck_schema() {
  static const KeySchema s = [] {
    KeySchema k;
    for (const auto& [sec, fields] : runtime_sections()) {
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
      {"", {"name", "nodes", "devices_per_node", "cores_per_node", "device", "links", "slurm",
            "software"}},
      {"software", {"name", "tp_overlap", "pp_scatter_gather", "attention_dropout", "attention_block",
                    "overlap_efficiency"}},
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
      {"links.inter_node", tier},
      {"slurm", {"partition", "account", "gpu_bind", "mpi", "binding", "gpu_aware_env", "time"}},
  };
  return s;
}

std::vector<std::string> runtime_deck_fields() {
  std::vector<std::string> out;
  for (const auto& [sec, fields] : runtime_sections())
    for (const auto& f : fields) out.push_back(sec + "." + f);
  return out;
}

}  // namespace mini5d::plan
