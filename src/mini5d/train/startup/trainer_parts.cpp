// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/train/startup/trainer_parts.hpp"

#include <iomanip>
#include <iostream>
#include <stdexcept>
#include <vector>

#include "mini5d/checkpoint/run_identity.hpp"
#include "mini5d/comm/agreement.hpp"
#include "mini5d/comm/device_mpi.hpp"
#include "mini5d/comm/watchdog.hpp"
#include "mini5d/core/deck_blame.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/grid/layout_rules.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/train/deck_plan.hpp"
#include "mini5d/train/startup/activation_budget.hpp"
#include "mini5d/train/startup/memory_fit.hpp"
#include "mini5d/train/state_memory.hpp"
#include "mini5d/train/stop_signal.hpp"
#include "mini5d/train/trainer.hpp"
#include "mini5d/train/zero_model.hpp"

namespace mini5d::train {

namespace {
// The deck's data source, with progress lines (rank 0) and a stop on a stop signal.
std::unique_ptr<data::Source> build_source(const Deck& deck, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // A large Markov table takes minutes: say so, report progress, and stop on SIGTERM
  // or SIGUSR1 (nothing has trained yet, so there is nothing to save).
  data::BuildHooks hooks;
  hooks.poll = [] {
    comm::watchdog::progress();  // local work under way: the start-up phase is not stuck
    if (const int sig = stop_signal())
      throw std::runtime_error("stopped by signal " + std::to_string(sig) +
                               " while building the data source; nothing was trained or saved");
  };
  if (rank == 0) hooks.note = [](const std::string& line) { std::cout << line << std::endl; };
  const double bytes = data::predicted_source_bytes(deck);
  if (rank == 0 && bytes >= 256.0 * 1024 * 1024)
    std::cout << "data: building a Markov table of " << deck.model.vocab << "^" << deck.data.markov_order
              << " contexts x " << deck.data.markov_branching << " successors (" << std::fixed
              << std::setprecision(2) << bytes / (1024.0 * 1024 * 1024) << std::defaultfloat
              << " GiB on every rank); progress every 10 s" << std::endl;
  auto source = data::make_source(deck, hooks);
  if (source->vocab() > deck.model.vocab) {
    const std::string what = "model.vocab=" + std::to_string(deck.model.vocab) +
                             " is smaller than the data's vocabulary " + std::to_string(source->vocab());
    throw InputError(blamed_origin(deck, what + " data.path") + ": " + what);
  }
  return source;
}

// Refuses (InputError on every rank) a run whose predicted memory per rank exceeds what
// its node or device has free, unless train.allow_oversubscribe_memory=true. `params`:
// the model's parameter layout, built before the model; nothing is allocated yet (a
// pipeline rank holds only its stage's units).
void refuse_if_memory_short(const TrainerParts& p, const model::ParamLayout& params) {
  const Deck& deck = *p.deck;
  const plan::Layout& layout = p.settings.layout;
  MemoryNeed need;
  need.data = data::predicted_source_bytes(deck);
  const StateMemory st = predicted_state(deck, layout, params, p.comms->dp().size(), p.comms->dp_expert().size());
  need.state = st.weights + st.gradients + st.optimizer;
  const auto a = predicted_activation_memory(deck, layout, p.grid->coord(grid::Axis::p));
  need.activations = a.activations;
  need.workspace = a.workspace;
  const auto offer = memory_offer(p.grid->cart().get(), need);
  const std::string problem = memory_fit_problem(deck.source(), need, offer);
  std::vector<std::string> problems;
  if (!problem.empty() && !deck.train.allow_oversubscribe_memory) problems.push_back(problem);
  comm::raise_if_any(p.grid->cart().get(), problems, comm::ProblemKind::Input);
}

}  // namespace

TrainerParts build_trainer_parts(const Deck& deck, MPI_Comm comm) {
  TrainerParts p;
  p.deck = std::make_unique<const Deck>(deck);
  const Deck& d = *p.deck;
  p.settings.layout = plan_layout(d);
  const plan::Layout& layout = p.settings.layout;
  if (auto why = activation_budget_problem(d, layout); !why.empty()) throw InputError(why);
  for (const auto& u : unsupported_features(d))  // tied: the sum needs ZeRO 0-1's whole buffer
    if (u.find("model.tie_embeddings") != std::string::npos) throw InputError(u);
  // Counting starts before the first allocation, so the first step's are seen too.
  prof::profile().enabled = kernel_profile_on(d);
  if (prof::profile().enabled) prof::start_counting_kokkos_events();
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  comm::watchdog::start(d.parallel.collective_timeout_s, world_rank);
  p.grid = std::make_unique<grid::ProcessGrid>(comm, std::array<int, grid::kAxes>{layout.d, layout.p, layout.c, layout.e, layout.t});
  // The app checks every rule first; a deck built in code (the tests') meets them too.
  if (const auto why = grid::layout_problems(d, p.grid->size()); !why.empty()) throw InputError(why.front());
  // One identity for the run, chosen by rank 0 (a resume replaces it with the checkpoint's).
  p.run_id = comm::bcast_string(p.grid->cart().get(), checkpoint::new_run_id(), 0);
  p.settings.transport =
      comm::gpu_aware_mpi(d.parallel.gpu_aware_mpi) ? comm::Transport::device : comm::Transport::staged;
  p.settings.bf16_grad_reduce = d.parallel.grad_reduce_dtype == Precision::bf16;
  p.settings.ranks_per_node = d.parallel.ranks_per_node;
  p.comms = std::make_unique<parallel::AxisComms>(*p.grid, p.settings.transport);
  model::ModelParallel mp{&p.comms->tensor(), layout.sp, d.train.recompute};
  mp.stage = pipeline_stage(d.model, layout, p.grid->coord(grid::Axis::p));
  mp.cp = &p.comms->ring();
  mp.zigzag = cp::split_from_env(layout.c).zigzag;
  mp.ep = &p.comms->experts();
  mp.aux_loss_coef = d.train.aux_loss_coef;
  // Built once: the memory check reads it before anything is allocated, the model keeps it.
  model::ParamLayout params = model::param_layout(d.model, mp);
  // Before the data source is built: its tables count in the memory check.
  refuse_if_memory_short(p, params);
  // Agreed: a data file missing or unreadable on one node fails there only.
  comm::agreed(p.grid->cart().get(), [&] { p.source = build_source(d, p.grid->cart().get()); });
  optim::AdamWConfig ac{d.train.beta1, d.train.beta2, d.train.eps, d.train.weight_decay};
  const auto bucket = std::int64_t(d.parallel.bucket_mb * 1024 * 1024 / sizeof(float));
  std::unique_ptr<ChunkRunner> chunks;
  // fp32, or bf16 with fp32 master weights (docs/precision.md); the rest of the run is
  // the same code.
  auto build = [&](auto& model, auto tag) {
    using S = decltype(tag);
    model = std::make_unique<model::Gpt<S>>(d.model, d.train.micro_batch, std::move(params),
                                            model_ownership(layout.zero), mp);
    p.base = model.get();
    p.zero = dp::make_zero_optimizer<S>(zero_model(*model), p.comms->dp(), layout.zero, ac, d.train.seed, bucket,
                                        &p.comms->tensor(), &p.comms->dp_expert(), &p.comms->experts(),
                                        p.settings.bf16_grad_reduce);
    chunks = std::make_unique<GptChunks<S>>(*model);
  };
  if (d.train.precision == Precision::bf16)
    build(p.model16, bf16{});
  else
    build(p.model, float{});
  // Grouped-query attention with t > kv_heads: t/kv_heads ranks share each key/value head.
  if (layout.t > d.model.kv_head_count())
    p.zero->sum_kv_shared_over(p.comms->split_kv_group(layout.t / d.model.kv_head_count()));
  // A tied embedding split over the pipeline: the two ends' group, made once, and wte's
  // place (or its copy's) in the gradient buffer.
  if (const auto* wte = p.base->layout().find("wte"); wte && d.model.tie_embeddings)
    p.tied = pp::TiedEmbedding(p.comms->split_pipeline_ends(), wte->offset, wte->size());
  p.pipeline = std::make_unique<Pipeline>(d, pipeline_spec(layout), p.comms->pp(), std::move(chunks), *p.zero,
                                          *p.source, p.grid->data_index(), p.grid->data_shards());
  p.pipeline->keep_timelines(!d.output.trace.empty());
  p.staging = mem::Charge(mem::Category::workspace, p.source->memory_bytes());
  return p;
}

}  // namespace mini5d::train
