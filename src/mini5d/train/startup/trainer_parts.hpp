// SPDX-License-Identifier: BSD-3-Clause
// Start-up: everything a run is made of, built from the deck and a communicator in the
// order the ranks must agree on it (the layout's checks, the grid, the run id, the
// memory check before any allocation, the data source, the model, ZeRO, the pipeline).
// The trainer takes the parts and is only the loop; every setting the run needs after
// start-up is read here, once, into a value it keeps (RunSettings).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>

#include "mini5d/comm/communicator.hpp"
#include "mini5d/core/deck.hpp"
#include "mini5d/core/memory_ledger.hpp"
#include "mini5d/data/source.hpp"
#include "mini5d/grid/process_grid.hpp"
#include "mini5d/model/gpt.hpp"
#include "mini5d/parallel/axis_comms.hpp"
#include "mini5d/parallel/dp/zero_optimizer.hpp"
#include "mini5d/parallel/pp/tied_embedding.hpp"
#include "mini5d/plan/cost/layout.hpp"
#include "mini5d/train/pipeline.hpp"

namespace mini5d::train {

// The deck's settings the run reads after start-up, resolved once.
struct RunSettings {
  plan::Layout layout;  // degrees, ZeRO stage, SP, schedule, the resolved stage split
  comm::Transport transport = comm::Transport::staged;  // parallel.gpu_aware_mpi, resolved
  bool bf16_grad_reduce = false;  // parallel.grad_reduce_dtype=bf16
  int ranks_per_node = 0;         // parallel.ranks_per_node (0: the real hosts)
};

struct TrainerParts {
  std::unique_ptr<const Deck> deck;  // where it stays: the pipeline keeps a reference
  RunSettings settings;
  std::string run_id;  // rank 0's, agreed
  std::unique_ptr<grid::ProcessGrid> grid;
  std::unique_ptr<parallel::AxisComms> comms;  // every accounted communicator of the run
  std::unique_ptr<data::Source> source;
  // One of the two, as train.precision says; base points at it.
  std::unique_ptr<model::Gpt<float>> model;
  std::unique_ptr<model::Gpt<bf16>> model16;
  model::ModelBase* base = nullptr;
  std::unique_ptr<dp::ZeroOptimizer> zero;
  pp::TiedEmbedding tied;  // model.tie_embeddings at p > 1, on the pipeline's two ends
  std::unique_ptr<Pipeline> pipeline;  // every step runs through it (p = 1: one stage)
  mem::Charge staging;  // the data source's tables
};

// Collective over `comm`, whose size must equal the deck's layout. Throws InputError
// (on every rank) for a deck the runtime refuses: a layout rule broken, an activation
// budget or the node's memory exceeded (unless train.allow_oversubscribe_memory), a
// data file missing on some node.
TrainerParts build_trainer_parts(const Deck& deck, MPI_Comm comm);

}  // namespace mini5d::train
