// SPDX-License-Identifier: BSD-3-Clause
// The mini5d side of the fp64 oracle test (docs/testing.md, "The PyTorch oracle"):
// trains a deck for its steps on one rank with mini5d's own model in fp64
// (model::Gpt<double>: every forward and backward kernel), mini5d's data source,
// learning-rate schedule, clipping factor and AdamW kernel, and writes what a second
// implementation needs to replay it and what it must agree with:
//   OUT/meta.json      the tensors (name, logical shape, offset, decay), the deck's
//                      settings, and per step: token loss, load-balancing loss, pre-clip
//                      gradient norm, learning rate and clipping factor;
//   OUT/init.f64       the initial flat parameter buffer (float64, little-endian);
//   OUT/tokens-S.i32   step S's inputs then targets, [sequences, seq] each (int32);
//   OUT/grads-S.f64    step S's pre-clip gradient buffer;
//   OUT/params-S.f64   the parameters after step S's update.
// The step is the trainer's at one rank: micro-batch a holds global sequences
// a*B .. a*B+B-1, the loss gradient is scaled by 1/(global tokens), the gradient norm is
// taken before clipping, and the update folds the clipping factor in. Only the loop is
// repeated here; what it calls is production code. The app's own loop is checked
// against the same oracle in fp32 (oracle_app.sh).
// usage: mini5d_oracle_fp64 DECK OUTDIR [section.field=value ...]
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/data/source.hpp"
#include "mini5d/kernels/grad_norm.hpp"
#include "mini5d/model/gpt.hpp"
#include "mini5d/optim/adamw.hpp"
#include "mini5d/optim/schedule.hpp"

using namespace mini5d;

namespace {

template <class T, class V>
void write_raw(const std::string& path, const V& host) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(host.data()), std::streamsize(host.size() * sizeof(T)));
  if (!f) throw std::runtime_error("cannot write " + path);
}

void write_view(const std::string& path, const Vec<double>& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  std::vector<double> host(h.data(), h.data() + h.extent(0));
  write_raw<double>(path, host);
}

std::string json_number(double x) {
  if (!std::isfinite(x)) return "null";  // the Python side fails on a null where it wants a number
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", x);
  return b;
}

int run(const std::string& deck_path, const std::string& out, const std::vector<std::string>& overrides) {
  const Deck deck = load_deck(deck_path, overrides);
  const auto& p = deck.parallel;
  if (p.d * p.t * p.p * p.c * p.e != 1) throw std::runtime_error("the fp64 oracle runs one rank: set every degree to 1");
  const ModelConfig& m = deck.model;
  const TrainConfig& tc = deck.train;
  const int B = tc.micro_batch, A = tc.accumulation, T = m.seq;
  const double tokens = double(B) * A * T;

  model::ModelParallel par;
  par.aux_loss_coef = tc.aux_loss_coef;
  model::Gpt<double> gpt(m, B, model::Owns::params_and_grads, par);
  gpt.init_params(std::uint64_t(tc.seed));
  const auto& layout = gpt.layout();
  std::vector<optim::Segment> segs;
  for (const auto& t : layout.tensors()) segs.push_back(optim::segment(t.offset, t.size(), t.decay));
  optim::AdamW<double> opt(std::int64_t(gpt.params.extent(0)), segs,
                           {tc.beta1, tc.beta2, tc.eps, tc.weight_decay});
  const auto source = data::make_source(deck);

  std::ostringstream meta;
  meta << "{\"vocab\": " << m.vocab << ", \"d_model\": " << m.d_model << ", \"layers\": " << m.layers
       << ", \"heads\": " << m.heads << ", \"kv_heads\": " << (m.kv_heads > 0 ? m.kv_heads : m.heads)
       << ", \"seq\": " << T << ", \"ffn\": " << m.ffn << ", \"norm\": \"" << to_string(m.norm) << "\", \"mlp\": \"" << to_string(m.mlp)
       << "\", \"bias\": " << flag_text(m.bias) << ", \"positions\": \"" << to_string(m.positions)
       << "\", \"rope_theta\": " << json_number(m.rope_theta) << ", \"tie_embeddings\": "
       << flag_text(m.tie_embeddings) << ", \"experts\": " << m.experts
       << ", \"top_k\": " << m.top_k << ", \"moe_every\": " << m.moe_every
       << ", \"capacity_factor\": " << json_number(m.capacity_factor) << ", \"attention\": \"" << to_string(m.attention)
       << "\", \"sequences\": " << B * A << ", \"steps\": " << tc.steps << ", \"lr\": " << json_number(tc.lr)
       << ", \"min_lr\": " << json_number(tc.min_lr) << ", \"warmup\": " << tc.warmup
       << ", \"beta1\": " << json_number(tc.beta1) << ", \"beta2\": " << json_number(tc.beta2)
       << ", \"eps\": " << json_number(tc.eps) << ", \"weight_decay\": " << json_number(tc.weight_decay)
       << ", \"grad_clip\": " << json_number(tc.grad_clip) << ", \"aux_loss_coef\": " << json_number(tc.aux_loss_coef)
       << ", \"numel\": " << gpt.params.extent(0) << ",\n \"tensors\": [";
  for (std::size_t i = 0; i < layout.tensors().size(); ++i) {
    const auto& t = layout.tensors()[i];
    meta << (i ? ",\n  " : "\n  ") << "{\"name\": \"" << t.name << "\", \"offset\": " << t.offset
         << ", \"decay\": " << (t.decay ? "true" : "false") << ", \"shape\": [";
    for (std::size_t k = 0; k < t.shape.size(); ++k) meta << (k ? ", " : "") << t.shape[k];
    meta << "]}";
  }
  meta << "],\n \"steps_run\": [";
  write_view(out + "/init.f64", gpt.params);

  std::vector<int> in_all, tg_all, in, tg;
  Kokkos::View<int*, Kokkos::LayoutRight, MemSpace> d_in("in", std::size_t(B) * T), d_tg("tg", std::size_t(B) * T);
  for (long s = 0; s < tc.steps; ++s) {
    gpt.zero_grads();
    gpt.reset_moe_stats();
    in_all.clear(), tg_all.clear();
    double loss = 0, aux = 0;
    for (int a = 0; a < A; ++a) {
      data::fill_batch(*source, std::uint64_t(s), std::uint64_t(a) * B, B, T, in, tg);
      in_all.insert(in_all.end(), in.begin(), in.end());
      tg_all.insert(tg_all.end(), tg.begin(), tg.end());
      Kokkos::deep_copy(d_in, Kokkos::View<const int*, Kokkos::HostSpace>(in.data(), in.size()));
      Kokkos::deep_copy(d_tg, Kokkos::View<const int*, Kokkos::HostSpace>(tg.data(), tg.size()));
      loss += gpt.forward(d_in, d_tg, 1.0 / tokens);
      aux += gpt.last_aux_loss();
      gpt.backward();
    }
    const double norm = std::sqrt(kernels::sum_of_squares<double>(gpt.grads));
    const double factor = kernels::clip_factor(norm, tc.grad_clip);
    const double lr = optim::learning_rate(s, tc.steps, tc.warmup, tc.lr, tc.min_lr);
    write_view(out + "/grads-" + std::to_string(s) + ".f64", gpt.grads);
    std::vector<int> toks(in_all);
    toks.insert(toks.end(), tg_all.begin(), tg_all.end());
    write_raw<int>(out + "/tokens-" + std::to_string(s) + ".i32", toks);
    opt.update(gpt.params, gpt.grads, lr, s + 1, factor);
    write_view(out + "/params-" + std::to_string(s) + ".f64", gpt.params);
    meta << (s ? ",\n  " : "\n  ") << "{\"loss\": " << json_number(loss / tokens)
         << ", \"aux_loss\": " << json_number(aux / tokens) << ", \"grad_norm\": " << json_number(norm)
         << ", \"lr\": " << json_number(lr) << ", \"clip_factor\": " << json_number(factor) << "}";
  }
  meta << "]}\n";
  std::ofstream f(out + "/meta.json");
  f << meta.str();
  if (!f) throw std::runtime_error("cannot write " + out + "/meta.json");
  std::printf("oracle fp64: %ld steps of %s written to %s\n", long(tc.steps), deck_path.c_str(), out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    if (argc < 3) {
      std::fprintf(stderr, "usage: mini5d_oracle_fp64 DECK OUTDIR [section.field=value ...]\n");
      rc = 2;
    } else {
      try {
        rc = run(argv[1], argv[2], std::vector<std::string>(argv + 3, argv + argc));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "mini5d_oracle_fp64: %s\n", e.what());
        rc = 1;
      }
    }
  }
  MPI_Finalize();
  return rc;
}
