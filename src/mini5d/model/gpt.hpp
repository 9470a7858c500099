// SPDX-License-Identifier: BSD-3-Clause
// The GPT decoder as a sequence of units built from layer modules (docs/architecture.md):
// the embeddings (vocab-parallel token embedding + learned positions, or none: rotary
// positions act in attention), the pre-norm blocks (attention and GELU MLP), and the head (final LayerNorm, LM head and the
// vocab-parallel cross-entropy). Each unit is also a ZeRO unit of the flat parameter
// buffers laid out by ParamLayout. Under tensor parallelism every rank holds its part
// of each layer and the layers call the TP layer (parallel/tp), never MPI; at t = 1
// the same code runs the whole model on one rank. Under pipeline parallelism a rank
// holds a stage: chunks of consecutive units (StageSpec), whose forward and backward the
// pipeline executor calls per micro-batch, each micro-batch in flight with its own set
// of activations; the parameter layout then holds only the stage's units. Under context
// parallelism each rank holds seq/c tokens of every sequence (parallel/cp/zigzag.hpp)
// and the attention core is ring attention (parallel/cp/ring_attention.hpp). Under
// expert parallelism the MoE blocks' experts are split over the e x t group.
//
// Collectives inside a forward or backward, so every rank of each group must call them
// together: the t group's all-reduces (Megatron cuts) or all-gathers and
// reduce-scatters (sequence parallelism) and the vocab-parallel loss; the c ring's K/V
// passes (ring attention); the e x t group's dispatch and combine all-to-alls (MoE
// blocks); and whatever the UnitHooks start around each unit (ZeRO's gathers and
// gradient reductions over the data-parallel groups, parallel/dp/zero_optimizer.hpp).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mini5d/core/deck.hpp"
#include "mini5d/core/memory_ledger.hpp"
#include "mini5d/kernels/views.hpp"
#include "mini5d/model/block.hpp"
#include "mini5d/model/embedding_layer.hpp"
#include "mini5d/model/head_layer.hpp"
#include "mini5d/model/model_base.hpp"
#include "mini5d/params/param_layout.hpp"
#include "mini5d/params/unit_hooks.hpp"
#include "mini5d/parallel/cp/ring_attention.hpp"

namespace mini5d::model {

// Writes elements [begin, end) of the flat parameter buffer's initial values to
// dst(0 .. end-begin): the same values whichever rank or shard asks (counter RNG keyed
// by seed, tensor name and logical element), so a shard equals the slice of the whole.
template <class S>
void init_param_range(const ParamLayout& layout, std::uint64_t seed, VecU<S> dst,
                      std::int64_t begin, std::int64_t end);

// A chunk of consecutive units a pipeline rank runs as one (docs/architecture.md): blocks
// [first_block, first_block + blocks), after the embeddings and before the head if it
// holds them.
struct ChunkSpec {
  int first_block = 0, blocks = 0;
  bool embedding = false, head = false;
};

// What a pipeline rank holds: its chunks (local chunk j is virtual stage j*p + rank),
// and how many micro-batches' activations it keeps at once: block_slots sets of one
// block's activations shared by every chunk (all blocks have the same shape), and
// embedding_slots / head_slots for the chunks with those units. Empty chunks: the
// whole model as one chunk, one set of each (no pipeline).
struct StageSpec {
  std::vector<ChunkSpec> chunks;
  int block_slots = 0, embedding_slots = 1, head_slots = 1;  // block_slots 0: one per layer of the chunk
};

// The global units (ParamLayout's Unit::global) a stage's chunks hold, ascending; empty
// for no chunks (the whole model).
std::vector<int> stage_units(const ModelConfig& cfg, const StageSpec& st);

// How this rank's model is split: the tensor-parallel group (none: t = 1), sequence
// parallelism, activation recomputation, the pipeline stage it holds, and the
// context-parallel ring (none: c = 1) with how it splits the sequence (zig-zag unless a
// test asks for contiguous chunks);
// the expert-parallel group (e x t; none: every expert on this rank) with the MoE settings
// the deck's model does not carry.
struct ModelParallel {
  tp::TpComm* tp = nullptr;
  bool sp = false;
  Recompute recompute = Recompute::none;
  StageSpec stage = {};
  cp::CpComm* cp = nullptr;
  bool zigzag = true;
  ep::EpComm* ep = nullptr;
  double aux_loss_coef = 0;  // train.aux_loss_coef
};

// Which flat buffers a model allocates and binds every unit to; what it does not own
// (gradients under ZeRO-2, both under ZeRO-3) the caller binds per unit.
enum class Owns { params_and_grads, params, nothing };

// The parameter layout of a model with these settings: its tensor and expert shares and
// its pipeline stage's units. Start-up builds it once, reads it for the memory check
// before the model exists, and hands the same value to the model.
ParamLayout param_layout(const ModelConfig& cfg, const ModelParallel& par);

template <class S>
class Gpt final : public ModelBase {
 public:
  using Owns = model::Owns;
  Gpt(const ModelConfig& cfg, int micro_batch, Owns owns = Owns::params_and_grads, ModelParallel par = {});
  // With the layout built beforehand; it must be param_layout(cfg, par).
  Gpt(const ModelConfig& cfg, int micro_batch, ParamLayout layout, Owns owns, ModelParallel par);

  const ModelConfig& config() const override { return cfg_; }
  const ParamLayout& layout() const override { return layout_; }
  int micro_batch() const { return batch_; }
  const Dims& dims() const { return ctx_.dims; }
  Recompute recompute() const { return ctx_.recompute; }
  bool sequence_parallel() const { return ctx_.region.sequence_split(); }
  // Bytes of activations kept for the backward (with the MoE layers' routed rows as
  // allocated so far), and of the backward's work buffers.
  std::int64_t activation_bytes() const override {
    std::int64_t routed = 0;
    for (const auto& b : blocks_)
      if (b.moe()) routed += b.moe()->routed_bytes();
    return acts_mem_.bytes() + routed;
  }
  std::int64_t workspace_bytes() const override { return work_mem_.bytes(); }
  // Ring attention (c > 1; nullptr otherwise): its blocks and buffers.
  const cp::RingAttention<S>* ring() const { return ring_.get(); }

  // Parameters from the counter-based RNG keyed by (seed, tensor name, element):
  // any slice of a tensor equals the same slice of the single-rank tensor.
  void init_params(std::uint64_t seed);
  void zero_grads();

  // Forward on one micro-batch of micro_batch * dims().seq tokens (row-major [b, t]; with
  // context parallelism the rank's tokens of each sequence, dims().pos gives where) with
  // the loss; returns the summed token loss. The loss gradient, scaled by grad_scale
  // per token, is kept for backward().   collective over the t group, the c ring, e x t
  double forward(CTok inputs, CTokU targets, acc_t<S> grad_scale);
  // Backward of the last forward (the model holds its token ids); accumulates
  // into grads.
  //                                      collective over the t group, the c ring, e x t
  void backward();
  // Mixture of experts: what the MoE layers counted since the last reset (token loads,
  // dropped assignments, the load-balancing loss), and the load-balancing loss of the
  // last forward in the units of its summed token loss: the objective whose gradient
  // backward() computes is grad_scale * (forward() + last_aux_loss()).
  const MoeStats& moe_stats() const override { return ctx_.moe_stats; }
  void reset_moe_stats() override { ctx_.moe_stats = MoeStats{}; }
  double last_aux_loss() const { return last_aux_; }
  const Block<S>& block(int l) const { return blocks_[std::size_t(l)]; }
  int block_sets() const { return int(blocks_.size()); }  // blocks' activation sets (pipeline: in flight)

  // Pipeline parallelism: forward of micro-batch `mb` on local chunk `chunk`, from the
  // token ids (the chunk with the embeddings) or from x_in, the previous chunk's output
  // ([rows, d_model]); the caller keeps x_in until backward_chunk, and the model holds a
  // reference to the token ids until then (the embedding's backward reads them again).
  // Returns the summed
  // token loss on the chunk with the head, else 0. The chunk keeps its activations
  // until backward_chunk(chunk, mb).       collective over the t group, the c ring, e x t
  double forward_chunk(int chunk, int mb, CTok inputs, CMatU<S> x_in, CTokU targets, acc_t<S> grad_scale);
  // The output of a forward not yet backpropagated (chunks without the head).
  CMatU<S> chunk_output(int chunk, int mb) const;
  // Backward of micro-batch `mb` on `chunk`; dy = dL/d(chunk_output) (ignored by the
  // chunk with the head). Returns dL/d(x_in) for a chunk without the embeddings, in a
  // shared buffer valid until the next backward.
  //                                      collective over the t group, the c ring, e x t
  CMatU<S> backward_chunk(int chunk, int mb, CMatU<S> dy);
  const std::vector<ChunkSpec>& chunks() const override { return chunks_; }

  // Points unit `unit`'s parameter (or gradient) tensors at storage whose first
  // element is the unit's first; nullptr leaves that side as it is.
  void bind_unit(int unit, S* params_base, acc_t<S>* grads_base);
  // Called around every unit in forward and backward; nullptr for none.
  void set_hooks(UnitHooks* hooks) { ctx_.hooks = hooks ? hooks : &no_hooks_; }

  Vec<S> params;  // flat, in ParamLayout order (empty if not owned)
  // Same layout, in acc_t<S>: a bf16 model's main gradients are fp32, accumulated over
  // micro-batches without rounding to bf16.
  Vec<acc_t<S>> grads;

 private:
  ModelConfig cfg_;
  int batch_;
  tp::TpComm single_;  // the group of one, when no tensor parallelism is given
  ep::EpComm single_ep_;  // likewise for expert parallelism
  double last_aux_ = 0;
  ParamLayout layout_;
  UnitHooks no_hooks_;
  Context<S> ctx_;
  mem::Charge params_mem_, grads_mem_, acts_mem_, work_mem_, ring_mem_;
  std::unique_ptr<cp::RingAttention<S>> ring_;
  std::vector<BlockTensors<S>> pw_;  // parameter views per block
  std::vector<BlockTensors<acc_t<S>>> gw_;  // gradient views per block
  OuterTensors<S> po_;
  OuterTensors<acc_t<S>> go_;
  std::vector<ChunkSpec> chunks_;
  // Pools of layer objects (each holds one micro-batch's activations of its unit),
  // taken by a forward and given back by its backward; the token ids are the caller's
  // buffer (InFlight::tokens holds a reference), read in place by the embedding's forward
  // and backward.
  std::vector<std::unique_ptr<EmbeddingLayer<S>>> embeddings_;
  std::vector<Block<S>> blocks_;
  std::vector<std::unique_ptr<HeadLayer<S>>> heads_;
  std::vector<int> free_embeddings_, free_blocks_, free_heads_;
  struct InFlight {
    int embedding = -1, head = -1;
    std::vector<int> blocks;
    CMatU<S> x_in;
    CTok tokens;  // the embedding chunk's token ids (a reference to the caller's buffer)
  };
  std::map<std::pair<int, int>, InFlight> in_flight_;  // (chunk, micro-batch)
  // Profiling region names per global unit (embedding, blocks, head), made once.
  struct UnitRegions {
    std::string forward, backward;
  };
  std::vector<UnitRegions> unit_regions_;
};

}  // namespace mini5d::model
