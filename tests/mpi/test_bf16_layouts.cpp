// SPDX-License-Identifier: BSD-3-Clause
// bf16 training (train.precision=bf16: bf16 weights, activations and messages, fp32
// master weights, moments and main gradients) on the data and tensor axes, under
// mpiexec -n 4: each layout against the single-rank bf16 run of the same deck (the
// invariance oracle of invariance.hpp), in both of its configurations, with the
// gradients reduced in fp32 and in bf16; the bytes each axis moved against fp32's; the
// memory per category against the planner's bf16 figures; and an injected gradient
// scale error that the oracle must catch. The pipeline and context axes are in
// test_bf16_pipeline_and_ring.cpp, checkpoints in test_bf16_resume.cpp (one binary).
//
// Tolerance. In fp32 two layouts differ by the order of fp32 sums (invariance.hpp). In
// bf16 the same fp32 differences reach the master weights, and a master weight that
// lies near the midpoint of two bf16 values rounds to the other one in one layout: a
// step of 2^-8 relative in that weight of the working copy. Under tensor parallelism
// the partial sums of a row-parallel product are rounded to bf16 before the all-reduce
// adds them (and the sum is rounded again), where one rank rounds the full sum once: up
// to 2 u = 2^-7 relative per element of those activations, in both directions, through
// every block. Those differences are rounding-sized, each of either sign, so losses and
// norms drift by a small multiple of u over the run, not by u per step. Measured over
// 10 steps of the tiny deck, both configurations (llama-tiny in brackets): losses within
// 1.9e-4 (9.5e-5), pre-clip norms 4.0e-3 (2.8e-3), parameter sums 1.03e-2 (7.1e-3) and
// sums of squares 3.0e-3 (4.4e-4); d2 at ZeRO 0-3 is bit-identical to one rank but for
// the order of fp32 sums (norms 1.8e-11). With the gradients reduced in bf16
// (parallel.grad_reduce_dtype=bf16): losses 1.7e-4, norms 3.6e-3, sums 1.4e-2, sums of
// squares 5.1e-3. The bounds are u = 3.9e-3 on the losses and
// 8 u = 3.1e-2 on the norms, the sums and the sums of squares: a wrongly scaled gradient
// moves the norm by its factor (x2 below: 100%), a lost or misplaced gradient moves the
// losses by far more than u.
// One tensor is left out of the parameter checksums: attn.qkv.bias holds the key bias,
// whose exact gradient is zero (softmax ignores a constant added to a row of scores).
// In fp32 its gradient is rounding noise at 2^-24 of the others and its sum drifts
// (invariance.hpp's loose bound on sums); in bf16 the noise is 2^-8 of them, and AdamW's
// m / sqrt(v) turns noise of any size into steps of the learning rate, so the key bias
// random-walks differently in every layout (measured: its sum of squares 2.5e-2 to
// 8.6e-2 apart). Every other tensor is held to the bounds, and the Llama block has no
// biases, so there every tensor is.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "mini5d/comm/accounts.hpp"
#include "mini5d/core/memory_ledger.hpp"
#include "mini5d/train/trainer.hpp"
#include "bf16_bounds.hpp"
#include "invariance.hpp"
#include "layouts.hpp"
#include "mpi_util.hpp"

using namespace mini5d;
using test::Group;
using test::Invariance;
using test::world_rank;
using test::world_size;

namespace {
const test::Tolerance kBf16 = test::kBf16Bounds;
const std::vector<std::string> kNullGradient = test::key_biases(2);
std::vector<std::string> with_bf16(std::vector<std::string> extra) { return test::bf16_with(std::move(extra)); }

void print(const std::string& what, const Invariance& w) {
  if (world_rank() == 0)
    std::printf("bf16 invariance %-40s loss %.2e  grad_norm %.2e  sum %.2e  sum_sq %.2e (%s)\n", what.c_str(), w.loss,
                w.grad_norm, w.sum, w.sum_sq, w.worst_sum_sq_tensor.c_str());
}

// One layout's invariance figures against the bf16 bounds, printed on rank 0.
void check_within_bf16(const std::string& what, const Invariance& w) {
  INFO(what << ": loss " << w.loss << " grad_norm " << w.grad_norm << " sum " << w.sum << " sum_sq " << w.sum_sq);
  CHECK(test::within(w, kBf16));
  print(what, w);
}

// Every axis's bytes per step of a finished run equal the planner's prediction.
void check_traffic_as_predicted(const train::Trainer& tr, const std::string& what) {
  for (const auto& a : tr.record().traffic) {
    INFO(what << " " << a.axis << ": measured " << a.measured << " predicted " << a.predicted);
    CHECK(a.worst == 0);
  }
}

struct ScaleError {
  explicit ScaleError(double f) { train::testing::set_gradient_scale_error(f); }
  ~ScaleError() { train::testing::set_gradient_scale_error(1.0); }
};
}  // namespace

TEST_CASE("bf16 layout invariance: d (ZeRO 0-3) and t (with and without SP) match one bf16 rank", "[bf16][mpi]") {
  REQUIRE(world_size() == 4);
  const int steps = 10;
  for (const auto& cfg : test::configs()) {
    const test::Reference ref = test::Reference::run(test::tiny("", steps, with_bf16(cfg.overrides)));
    for (const test::Layout& l : {test::Layout("d2 zero0"), test::Layout("d2 zero1"), test::Layout("d2 zero3"),
                                  test::Layout("d4 zero2"), test::Layout("t2 sp"), test::Layout("t2 nosp"),
                                  test::Layout("t4 sp"), test::Layout("d2 t2 sp zero3")})
      test::on_first_group(l.ranks(), [&](MPI_Comm group) {
        train::Trainer tr(test::tiny(l, steps, with_bf16(cfg.overrides)), group);
        tr.run();
        const Invariance w = test::compare_runs(ref, tr, kNullGradient);
        const std::string what = l.name() + " (" + cfg.name + ")";
        check_within_bf16(what, w);
      });
  }
}

TEST_CASE("bf16 Llama block (RMSNorm, SwiGLU, RoPE, GQA) at t2 with SP matches one bf16 rank", "[bf16][mpi]") {
  const int steps = 10;
  for (const auto& cfg : test::configs()) {
    const test::Reference ref =
        test::Reference::run(test::layout_deck(test::input_deck("llama-tiny.yaml"), "", steps, with_bf16(cfg.overrides)));
    for (const test::Layout& l : {test::Layout("t2 sp"), test::Layout("d2 t2 sp zero1")})
      test::on_first_group(l.ranks(), [&](MPI_Comm group) {
        train::Trainer tr(test::layout_deck(test::input_deck("llama-tiny.yaml"), l, steps, with_bf16(cfg.overrides)), group);
        tr.run();
        const Invariance w = test::compare_runs(ref, tr);
        const std::string what = "llama-tiny " + l.name() + " (" + cfg.name + ")";
        check_within_bf16(what, w);
      });
  }
}

TEST_CASE("bf16 gradient reduction (grad_reduce_dtype=bf16) matches one bf16 rank; its bytes halve", "[bf16][mpi]") {
  // The fp32 main gradients are rounded to bf16 for the wire and summed in bf16: one
  // more rounding of u per gradient element and per addition, of either sign, which
  // AdamW's normalisation turns into direction errors of that size; the same bounds.
  const int steps = 10;
  for (const auto& cfg : test::configs()) {
    auto extra = with_bf16(cfg.overrides);
    const test::Reference ref = test::Reference::run(test::tiny("", steps, extra));
    extra.push_back("parallel.grad_reduce_dtype=bf16");
    for (const test::Layout& l : {test::Layout("d2 zero1"), test::Layout("d2 zero3"), test::Layout("d4 zero2"),
                                  test::Layout("d2 t2 sp zero1")})
      test::on_first_group(l.ranks(), [&](MPI_Comm group) {
        train::Trainer tr(test::tiny(l, steps, extra), group);
        tr.run();
        const Invariance w = test::compare_runs(ref, tr, kNullGradient);
        const std::string what = l.name() + " bf16 reduce (" + cfg.name + ")";
        check_within_bf16(what, w);
      });
  }
  // Bytes: the d gradients halve at every stage, nothing else changes.
  for (const test::Layout& l : {test::Layout("d2 zero1"), test::Layout("d2 zero2"), test::Layout("d2 zero3")})
    test::on_first_group(l.ranks(), [&](MPI_Comm group) {
      double grads[2], weights[2];
      for (int b = 0; b < 2; ++b) {
        comm::accounts().clear();
        auto extra = with_bf16({});
        if (b) extra.push_back("parallel.grad_reduce_dtype=bf16");
        train::Trainer tr(test::tiny(l, 2, extra), group);
        tr.run();
        grads[b] = comm::accounts().bytes("dp", comm::Traffic::grads);
        weights[b] = comm::accounts().bytes("dp", comm::Traffic::weights);
        check_traffic_as_predicted(tr, l.name() + (b ? " bf16 reduce" : " fp32 reduce"));
      }
      INFO(l.name() << ": d gradients " << grads[0] << " -> " << grads[1]);
      CHECK(grads[0] > 0);
      CHECK(grads[1] == 0.5 * grads[0]);
      CHECK(weights[1] == weights[0]);
    });
}

TEST_CASE("bf16: a gradient scale error is caught by the gradient norm", "[bf16][mpi]") {
  // As in fp32 (test_data_parallel): x2 on every rank's gradient is hidden from the
  // losses by clipping and AdamW, and doubles the pre-clip norm.
  const int steps = 10, d = 2;
  const test::Reference ref = test::Reference::run(test::tiny("", steps, with_bf16({})));
  Group g(d);
  // fp32 and bf16 gradient reductions: a wrongly scaled bf16 reduction is caught too.
  for (const char* reduce : {"fp32", "bf16"}) {
    Invariance w;
    {
      ScaleError injected{double(d)};
      train::Trainer tr(test::tiny("d2 zero1", steps, with_bf16({std::string("parallel.grad_reduce_dtype=") + reduce})),
                        g.comm);
      tr.run();
      w = test::compare_runs(ref, tr, kNullGradient);
    }
    print(std::string("injected x2 d2 zero1, ") + reduce + " reduce", w);
    INFO(reduce << " reduce: grad_norm " << w.grad_norm);
    CHECK(std::abs(w.grad_norm - (d - 1)) < 1e-2);
    CHECK_FALSE(test::within(w, kBf16));
  }
}

TEST_CASE("bf16 bytes per axis: activation messages and weight gathers halve, fp32 gradients stay", "[bf16][mpi]") {
  // For each layout, one fp32 and one bf16 run of 2 steps, their accounts compared. The
  // vocab-parallel loss's statistics (t*N row maxima and 2N sums per micro-batch) are
  // fp32 in both; every other t message carries bf16 activations.
  const int steps = 2;
  for (const test::Layout& l : {test::Layout("t2 sp"), test::Layout("t2 nosp"), test::Layout("d2 zero1"),
                                test::Layout("d2 zero3"), test::Layout("d2 t2 sp zero2")})
    test::on_first_group(l.ranks(), [&](MPI_Comm group) {
      double t_act[2], t_grad[2], d_grad[2], d_weights[2];
      for (int b = 0; b < 2; ++b) {
        comm::accounts().clear();
        train::Trainer tr(test::tiny(l, steps, b ? with_bf16({}) : std::vector<std::string>{}), group);
        tr.run();
        t_act[b] = comm::accounts().bytes("tp", comm::Traffic::activations);
        t_grad[b] = comm::accounts().bytes("tp", comm::Traffic::grads);
        d_grad[b] = comm::accounts().bytes("dp", comm::Traffic::grads);
        d_weights[b] = comm::accounts().bytes("dp", comm::Traffic::weights);
        // Every axis as the planner predicts, for this precision.
        check_traffic_as_predicted(tr, l.name() + (b ? " bf16" : " fp32"));
      }
      const double N = 16.0 / l.d * 32;  // tokens of a rank's micro-batch: micro_batch 16/d, seq 32
      const double stats = l.t > 1 ? steps * (l.t * N + 2 * N) * 4 : 0;
      INFO(l.name() << ": t " << t_act[0] << " -> " << t_act[1] << ", d weights " << d_weights[0] << " -> "
                    << d_weights[1]);
      CHECK(t_act[1] - stats == 0.5 * (t_act[0] - stats));
      CHECK(t_grad[1] == t_grad[0]);
      CHECK(d_grad[1] == d_grad[0]);
      CHECK(d_weights[1] == 0.5 * d_weights[0]);
      if (l.t > 1) CHECK(t_act[1] > 0);
      if (l.d > 1 && l.zero >= 1) CHECK(d_weights[1] > 0);
    });
}

TEST_CASE("bf16 memory per category equals the planner's bf16 figures", "[bf16][mpi]") {
  // bf16 working copy (2 bytes), fp32 main gradients (4), fp32 master weights and two
  // moments (12), sharded by ZeRO stage; activations with bf16 tensors and fp32
  // statistics (plan/cost/memory_model.cpp).
  for (const test::Layout& l : {test::Layout(""), test::Layout("d2 zero1"), test::Layout("d2 zero2"),
                                test::Layout("d2 zero3"), test::Layout("t2 sp"), test::Layout("d2 t2 nosp zero3"),
                                test::Layout("c2"), test::Layout("t2 c2 sp")})
    test::on_first_group(l.ranks(), [&](MPI_Comm group) {
      train::Trainer tr(test::tiny(l, 1, with_bf16({})), group);
      tr.run();
      const auto want = tr.predicted_state_memory(), got = tr.measured_state_memory();
      const auto act_want = tr.predicted_activation_memory(), act_got = tr.measured_activation_memory();
      INFO(l.name() << ": weights " << got.weights << " / " << want.weights << ", gradients " << got.gradients << " / "
                    << want.gradients << ", optimizer " << got.optimizer << " / " << want.optimizer << ", activations "
                    << act_got.activations << " / " << act_want.activations << ", workspace " << act_got.workspace
                    << " / " << act_want.workspace);
      CHECK(got.weights == want.weights);
      CHECK(got.gradients == want.gradients);
      CHECK(got.optimizer == want.optimizer);
      CHECK(act_got.activations == act_want.activations);
      CHECK(act_got.workspace == act_want.workspace);
    });
}
