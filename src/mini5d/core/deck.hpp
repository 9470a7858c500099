// SPDX-License-Identifier: BSD-3-Clause
// The input deck: a YAML file of sections (model, parallel, train, data, output) with
// section.field=value overrides from the command line. Every field is declared once
// in deck_schema.cpp with its type, range and meaning; parsing checks each one and
// reports every problem (file, line, field, what is allowed) before anything runs.
// A choice is parsed here, once, into its enum (rules/deck_choices.hpp) and a true/false
// field into a bool: nothing past the parser compares a deck value as text.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mini5d/rules/deck_choices.hpp"
#include "mini5d/rules/stage_split.hpp"

namespace mini5d {

struct ModelConfig {
  int vocab = 256;
  // Pad the vocabulary to a multiple of vocab_pad_to x t (0: 128 x t, Megatron's
  // default); 1 pads only when t does not divide vocab (rules/vocab_padding.hpp).
  int vocab_pad_to = 1;
  int d_model = 128;
  int layers = 4;
  int heads = 4;
  // Key/value heads (grouped-query attention: query head h reads key/value head
  // h / (heads/kv_heads)); must divide heads. 0: heads (multi-head attention).
  int kv_heads = 0;
  int seq = 64;
  int ffn = 512;
  int experts = 0;  // 0: dense MLP; > 0: mixture of experts (expert axis)
  int top_k = 1;
  int moe_every = 1;           // with experts > 0: block l is MoE when (l + 1) % moe_every == 0
  double capacity_factor = 0;  // 0: dropless; > 0: tokens over an expert's capacity are dropped
  bool tie_embeddings = false;
  Attention attention = Attention::blockwise;  // c = 1 core: blockwise (keeps lse) | full (keeps P)
  // The block's parts (GPT-2's by default; rmsnorm, swiglu, false: Llama's).
  Norm norm = Norm::layernorm;  // layernorm | rmsnorm
  Mlp mlp = Mlp::gelu;  // gelu | swiglu (gate and up, silu-gated, then down)
  bool bias = true;  // false: no linear or norm has a bias
  // Positions: a learned table added to the embeddings, or rotary (RoPE) on q and k with
  // base rope_theta (kernels/rope.hpp), which has no parameters.
  Positions positions = Positions::learned;  // learned | rope
  double rope_theta = 10000;
  int kv_head_count() const { return kv_heads > 0 ? kv_heads : heads; }
};

struct ParallelConfig {
  int d = 1, t = 1, p = 1, c = 1, e = 1;
  int zero = 0;
  int virtual_stages = 1;  // interleaved pipeline chunks per stage
  StageLayers stage_layers;  // auto | balanced | blocks per virtual stage (rules/stage_split.hpp)
  int ranks_per_node = 0;  // 0: detect with MPI_COMM_TYPE_SHARED; > 0: virtual nodes
  Toggle gpu_aware_mpi = Toggle::automatic;  // pass device pointers to MPI: auto|true|false (comm/device_mpi.hpp)
  bool force_placement = false;  // allow tensor groups that cross nodes
  double bucket_mb = 25;                  // largest gradient all-reduce (ZeRO 0-1), MiB
  Precision grad_reduce_dtype = Precision::fp32;  // what the data-parallel gradient reduction sends: fp32 | bf16
  double collective_timeout_s = 600;      // a blocking collective that lasts longer ends the job; 0: never
  bool sp = true;  // sequence parallelism when t > 1
  Schedule schedule = Schedule::one_f_one_b;  // pipeline schedule: gpipe | 1f1b | interleaved
  int ranks() const { return d * t * p * c * e; }
};

struct TrainConfig {
  long steps = 300;
  int micro_batch = 8;
  int accumulation = 1;
  std::uint64_t seed = 1234;
  double lr = 3e-3;
  double min_lr = 3e-4;
  long warmup = 20;
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double grad_clip = 1.0;
  double aux_loss_coef = 0.01;  // weight of the MoE load-balancing loss (experts > 0)
  Recompute recompute = Recompute::none;  // none | selective | full
  long max_skipped = 5;       // consecutive non-finite steps skipped before the run stops
  double spike_factor = 10;   // stop when a loss exceeds this x the running mean; 0: off
  double activation_budget_mib = 0;  // per-rank activations + work buffers allowed; 0: no limit
  bool allow_oversubscribe_memory = false;  // start even if the predicted memory exceeds what is free
  Precision precision = Precision::fp32;  // fp32 | bf16 (fp32 master weights) | fp64 (mini5d-plan only)
};

struct DataConfig {
  DataSource source = DataSource::markov;  // markov | text | tokens
  std::string path;
  std::uint64_t seed = 7;
  int markov_order = 1;
  int markov_branching = 4;
};

struct CheckpointConfig {
  std::string dir = "checkpoints";
  long every = 0;               // steps between saves; 0: none (and 0 when every_auto)
  bool every_auto = false;      // `every: auto`: the trainer derives it (train/checkpoint_interval.hpp)
  double node_mtbf_hours = 0;   // one node's mean time between failures; 0: no figure
  bool at_end = false;  // save after the last step
  int keep = 3;                 // newest checkpoints kept; 0 keeps all
  std::string resume;           // "", "latest" (in dir) or a checkpoint path
  bool overwrite = false;  // a fresh run may write beside another run's checkpoints
  bool async = false;  // snapshot to host, then write in the background while training goes on
};

struct OutputConfig {
  int log_every = 10;
  std::string report = "mini5d-report.json";
  std::string trace;  // Chrome trace-event JSON of the pipeline schedule (Perfetto); "" for none
  // Per-kernel timers and Kokkos event counts (kernels/profile.hpp, kernels/kokkos_events.hpp):
  // auto|true|false; auto is on for host backends, off for GPU ones, where both fence.
  Toggle kernel_profile = Toggle::automatic;
};

struct Deck {
  ModelConfig model;
  ParallelConfig parallel;
  TrainConfig train;
  DataConfig data;
  CheckpointConfig checkpoint;
  OutputConfig output;
  std::string origin = "built-in default deck";  // where it came from, for messages
  std::vector<std::string> overrides;             // the command line's section.field=value, in order

  // For messages about the run as a whole: the origin, and the overrides when there are
  // any ("tiny.yaml with model.seq=32768"), so a problem an override caused is not
  // blamed on the file alone.
  std::string source() const;

  // The deck as YAML with every field, loadable again by load_deck.
  std::string to_yaml() const;
  // The deck as a JSON object (for reports).
  std::string to_json() const;
};

// The built-in default deck (what `mini5d train` runs with no file).
Deck default_deck();
// Reads a deck file and applies "section.field=value" overrides. Throws InputError
// listing every problem found.
Deck load_deck(const std::string& path, const std::vector<std::string>& overrides = {});
// Same, from text already in memory; `origin` names it in messages.
Deck parse_deck(const std::string& text, const std::string& origin,
                const std::vector<std::string>& overrides = {});
// Human documentation of every field, generated from the schema.
std::string deck_help();
// The deck's sections, each with its fields, in schema order (the planner refuses a
// misspelt field in a deck it reads with this list).
std::vector<std::pair<std::string, std::vector<std::string>>> deck_sections();
// What a valid deck asks for that this build cannot run yet (one line each, naming
// the field); empty when it can run. `mini5d check` lists them, `mini5d train` refuses.
std::vector<std::string> unsupported_features(const Deck& deck);

}  // namespace mini5d
