// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/train/trainer.hpp"

#include <cmath>

#include "mini5d/core/error.hpp"
#include "mini5d/optim/schedule.hpp"

namespace mini5d::train {

double model_flops_per_token(const ModelConfig& m, std::int64_t matmul_params) {
  return 6.0 * double(matmul_params) + 12.0 * m.layers * double(m.d_model) * m.seq;
}

namespace {
// Brackets a phase with a Kokkos profiling region (seen by Kokkos Tools and vendor
// profilers) and a fenced wall-clock timer.
class Phase {
 public:
  Phase(const char* region, double& sink) : sink_(sink) {
    Kokkos::Profiling::pushRegion(region);
  }
  ~Phase() {
    Kokkos::fence();
    sink_ += timer_.seconds();
    Kokkos::Profiling::popRegion();
  }

 private:
  double& sink_;
  Kokkos::Timer timer_;
};
}  // namespace

Trainer::Trainer(const Deck& deck) : deck_(deck) {
  source_ = data::make_source(deck_);
  if (source_->vocab() > deck_.model.vocab)
    throw InputError(deck_.origin + ": model.vocab=" + std::to_string(deck_.model.vocab) +
                     " is smaller than the data's vocabulary " + std::to_string(source_->vocab()));
  model_ = std::make_unique<model::Gpt<float>>(deck_.model, deck_.train.micro_batch);
  model_->init_params(deck_.train.seed);
  std::vector<optim::Segment> segs;
  for (const auto& t : model_->layout().tensors()) segs.push_back({t.offset, t.size(), t.decay});
  optim::AdamWConfig ac{deck_.train.beta1, deck_.train.beta2, deck_.train.eps, deck_.train.weight_decay};
  adamw_ = std::make_unique<optim::AdamW<float>>(model_->layout().total(), segs, ac);
  flops_per_token_ = model_flops_per_token(deck_.model, model_->layout().matmul_params());
  const int n = deck_.train.micro_batch * deck_.model.seq;
  h_in_ = decltype(h_in_)("mini5d::train::inputs_host", n);
  h_tg_ = decltype(h_tg_)("mini5d::train::targets_host", n);
  d_in_ = Vec<int>("mini5d::train::inputs", n);
  d_tg_ = Vec<int>("mini5d::train::targets", n);
}

std::int64_t Trainer::tokens_per_step() const {
  return std::int64_t(deck_.train.micro_batch) * deck_.train.accumulation * deck_.model.seq;
}

StepStats Trainer::step(long s) {
  Kokkos::Timer timer;
  const auto& tc = deck_.train;
  const int B = tc.micro_batch, T = deck_.model.seq;
  const double tokens = double(tokens_per_step());
  // Gradient of the mean over every token of the step (all micro-batches).
  const float grad_scale = float(1.0 / tokens);

  model_->zero_grads();
  double loss_sum = 0;
  for (int a = 0; a < tc.accumulation; ++a) {
    {
      Phase p("mini5d::train::data", phases_.data);
      data::fill_batch(*source_, std::uint64_t(s), std::uint64_t(a) * B, B, T, inputs_, targets_);
      for (int i = 0; i < B * T; ++i) {
        h_in_(i) = inputs_[i];
        h_tg_(i) = targets_[i];
      }
      Kokkos::deep_copy(d_in_, h_in_);
      Kokkos::deep_copy(d_tg_, h_tg_);
    }
    {
      Phase p("mini5d::train::forward", phases_.forward);
      loss_sum += model_->forward(d_in_, d_tg_, grad_scale);
    }
    {
      Phase p("mini5d::train::backward", phases_.backward);
      model_->backward();
    }
  }
  StepStats st;
  st.step = s + 1;
  st.loss = loss_sum / tokens;
  {
    Phase p("mini5d::train::optimizer", phases_.optimizer);
    st.grad_norm = std::sqrt(optim::sum_of_squares(model_->grads));
    optim::clip_by_global_norm(model_->grads, st.grad_norm, tc.grad_clip);
    st.lr = optim::learning_rate(s, tc.steps, tc.warmup, tc.lr, tc.min_lr);
    adamw_->update(model_->params, model_->grads, st.lr, s + 1);
  }
  Kokkos::fence();
  st.seconds = timer.seconds();
  st.tokens_per_s = tokens / st.seconds;
  st.flops_per_s = st.tokens_per_s * flops_per_token_;
  return st;
}

void Trainer::run(const std::function<void(const StepStats&)>& on_step) {
  Kokkos::Timer timer;
  for (long s = 0; s < deck_.train.steps; ++s) {
    history_.push_back(step(s));
    if (!std::isfinite(history_.back().loss))
      throw std::runtime_error("mini5d: loss is not finite at step " + std::to_string(s + 1) +
                               " (lower train.lr or raise train.grad_clip's strictness)");
    if (on_step) on_step(history_.back());
  }
  total_seconds_ = timer.seconds();
}

}  // namespace mini5d::train
