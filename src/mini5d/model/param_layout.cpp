// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/model/param_layout.hpp"

#include <cmath>
#include <stdexcept>

namespace mini5d::model {

ParamLayout::ParamLayout(const ModelConfig& m) {
  const std::int64_t V = m.vocab, D = m.d_model, F = m.ffn, T = m.seq;
  // GPT-2 initialisation: N(0, 0.02), with the projections that write into the
  // residual stream scaled by 1/sqrt(2 * layers) so its variance does not grow with
  // depth.
  const double std0 = 0.02, std_res = 0.02 / std::sqrt(2.0 * m.layers);
  add("wte", {V, D}, Init::Normal, std0, true, false);
  add("wpe", {T, D}, Init::Normal, std0, true, false);
  close_unit("embeddings");
  for (int l = 0; l < m.layers; ++l) {
    const std::string b = "blocks." + std::to_string(l) + ".";
    add(b + "ln1.weight", {D}, Init::Ones, 0, false, false);
    add(b + "ln1.bias", {D}, Init::Zeros, 0, false, false);
    add(b + "attn.qkv.weight", {3 * D, D}, Init::Normal, std0, true, true);
    add(b + "attn.qkv.bias", {3 * D}, Init::Zeros, 0, false, false);
    add(b + "attn.proj.weight", {D, D}, Init::Normal, std_res, true, true);
    add(b + "attn.proj.bias", {D}, Init::Zeros, 0, false, false);
    add(b + "ln2.weight", {D}, Init::Ones, 0, false, false);
    add(b + "ln2.bias", {D}, Init::Zeros, 0, false, false);
    add(b + "mlp.fc.weight", {F, D}, Init::Normal, std0, true, true);
    add(b + "mlp.fc.bias", {F}, Init::Zeros, 0, false, false);
    add(b + "mlp.proj.weight", {D, F}, Init::Normal, std_res, true, true);
    add(b + "mlp.proj.bias", {D}, Init::Zeros, 0, false, false);
    close_unit("blocks." + std::to_string(l));
  }
  add("lnf.weight", {D}, Init::Ones, 0, false, false);
  add("lnf.bias", {D}, Init::Zeros, 0, false, false);
  add("lm_head.weight", {V, D}, Init::Normal, std0, true, true);
  close_unit("head");
}

void ParamLayout::close_unit(const std::string& name) {
  const std::int64_t begin = units_.empty() ? 0 : units_.back().offset + units_.back().size;
  units_.push_back({name, begin, total_ - begin});
}

void ParamLayout::add(const std::string& name, std::vector<std::int64_t> shape, Init init,
                      double stddev, bool decay, bool in_matmul) {
  TensorSpec t;
  t.name = name;
  t.shape = std::move(shape);
  t.offset = total_;
  t.init = init;
  t.stddev = stddev;
  t.decay = decay;
  t.in_matmul = in_matmul;
  total_ += t.size();
  tensors_.push_back(std::move(t));
}

const TensorSpec& ParamLayout::at(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return t;
  throw std::out_of_range("mini5d: no parameter tensor named " + name);
}

std::int64_t ParamLayout::matmul_params() const {
  std::int64_t n = 0;
  for (const auto& t : tensors_)
    if (t.in_matmul) n += t.size();
  return n;
}

}  // namespace mini5d::model
