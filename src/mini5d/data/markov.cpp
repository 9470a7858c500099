// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/data/markov.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "mini5d/core/counter_rng.hpp"

namespace mini5d::data {

namespace {
constexpr std::uint64_t kTableStream = 0x7461626c65ULL;   // "table"
constexpr std::uint64_t kSampleStream = 0x73616d706cULL;  // "sampl"

double entropy(const std::vector<double>& p) {
  double h = 0;
  for (double x : p)
    if (x > 0) h -= x * std::log(x);
  return h;
}
}  // namespace

MarkovSource::MarkovSource(int vocab, int order, int branching, std::uint64_t seed)
    : vocab_(vocab), order_(order), branching_(branching), seed_(seed) {
  contexts_ = 1;
  for (int i = 0; i < order; ++i) contexts_ *= vocab;
  succ_.resize(contexts_ * branching);
  cdf_.resize(contexts_ * branching);
  // Transition table: distinct successors by a partial Fisher-Yates shuffle, and
  // weights from Exp(1) draws (a flat Dirichlet), sharpened by squaring so the rows
  // are not all near-uniform.
  std::vector<int> perm(vocab);
  std::uint64_t draw = 0;
  for (std::int64_t c = 0; c < contexts_; ++c) {
    for (int i = 0; i < vocab; ++i) perm[i] = i;
    double total = 0;
    std::vector<double> w(branching);
    for (int j = 0; j < branching; ++j) {
      const int pick = j + int(rng::key(seed, kTableStream, draw++) % std::uint64_t(vocab - j));
      std::swap(perm[j], perm[pick]);
      succ_[c * branching + j] = perm[j];
      const double e = -std::log(rng::uniform(rng::key(seed, kTableStream, draw++)));
      w[j] = e * e;
      total += w[j];
    }
    double acc = 0;
    for (int j = 0; j < branching; ++j) {
      acc += w[j] / total;
      cdf_[c * branching + j] = acc;
    }
    cdf_[c * branching + branching - 1] = 1.0;
  }
  derive();
}

MarkovSource::MarkovSource(int vocab, int order, int branching, const std::vector<int>& successors,
                           const std::vector<double>& probabilities, std::uint64_t seed)
    : vocab_(vocab), order_(order), branching_(branching), seed_(seed) {
  contexts_ = 1;
  for (int i = 0; i < order; ++i) contexts_ *= vocab;
  if (std::int64_t(successors.size()) != contexts_ * branching || probabilities.size() != successors.size())
    throw std::invalid_argument("mini5d: a Markov table needs vocab^order x branching entries");
  succ_ = successors;
  cdf_.resize(successors.size());
  for (std::int64_t c = 0; c < contexts_; ++c) {
    double acc = 0;
    for (int j = 0; j < branching; ++j) cdf_[c * branching + j] = (acc += probabilities[c * branching + j]);
    if (std::fabs(acc - 1.0) > 1e-12) throw std::invalid_argument("mini5d: a Markov row does not sum to 1");
    cdf_[c * branching + branching - 1] = 1.0;
  }
  derive();
}

void MarkovSource::derive() {
  const int branching = branching_;
  // Stationary distribution by power iteration on the lazy chain (P + I) / 2, which
  // has the same fixed points and converges even when P is periodic.
  pi_.assign(contexts_, 1.0 / double(contexts_));
  std::vector<double> nxt(contexts_);
  for (int it = 0; it < 100000; ++it) {
    for (std::int64_t c = 0; c < contexts_; ++c) nxt[c] = 0.5 * pi_[c];
    for (std::int64_t c = 0; c < contexts_; ++c) {
      double prev = 0;
      for (int j = 0; j < branching; ++j) {
        const double p = cdf_[c * branching + j] - prev;
        prev = cdf_[c * branching + j];
        const std::int64_t to = (c * vocab_) % contexts_ + succ_[c * branching + j];
        nxt[to] += 0.5 * pi_[c] * p;
      }
    }
    double diff = 0;
    for (std::int64_t c = 0; c < contexts_; ++c) diff += std::fabs(nxt[c] - pi_[c]);
    pi_.swap(nxt);
    if (diff < 1e-15) break;
  }
  pi_cdf_.resize(contexts_);
  double acc = 0;
  for (std::int64_t c = 0; c < contexts_; ++c) pi_cdf_[c] = (acc += pi_[c]);
  // Entropy rate: sum over contexts of pi(ctx) * H(next | ctx).
  for (std::int64_t c = 0; c < contexts_; ++c) {
    double prev = 0, h = 0;
    for (int j = 0; j < branching; ++j) {
      const double p = cdf_[c * branching + j] - prev;
      prev = cdf_[c * branching + j];
      if (p > 0) h -= p * std::log(p);
    }
    entropy_rate_ += pi_[c] * h;
  }
  // Targets at positions 1 .. order-1 see only part of their context: their floor is
  // H(x_j | x_<j) = H(x_0..x_j) - H(x_0..x_j-1), from the marginals of pi over
  // context prefixes (a context's first token is its most significant digit).
  std::vector<double> joint_h(order_ + 1, 0.0);  // joint_h[j] = H(x_0 .. x_j-1)
  for (int j = 1; j <= order_; ++j) {
    std::int64_t span = 1;
    for (int i = j; i < order_; ++i) span *= vocab_;
    std::vector<double> marg(contexts_ / span, 0.0);
    for (std::int64_t c = 0; c < contexts_; ++c) marg[c / span] += pi_[c];
    joint_h[j] = entropy(marg);
  }
  for (int j = 1; j < order_; ++j) prefix_cond_entropy_.push_back(joint_h[j + 1] - joint_h[j]);
}

std::int64_t MarkovSource::first_context(double u) const {
  auto it = std::lower_bound(pi_cdf_.begin(), pi_cdf_.end(), u);
  if (it == pi_cdf_.end()) --it;
  return std::int64_t(it - pi_cdf_.begin());
}

int MarkovSource::next(std::int64_t ctx, double u) const {
  const double* row = &cdf_[ctx * branching_];
  int j = int(std::lower_bound(row, row + branching_, u) - row);
  if (j >= branching_) j = branching_ - 1;
  return succ_[ctx * branching_ + j];
}

void MarkovSource::sequence(std::uint64_t step, std::uint64_t index, int length, int* out) const {
  // One counter per (step, index); one draw per position.
  const std::uint64_t base = rng::key(seed_, kSampleStream, step);
  auto u = [&](int pos) { return rng::uniform(rng::key(base, index, std::uint64_t(pos))); };
  std::int64_t ctx = first_context(u(0));
  // Unpack the first context into its `order` tokens (most significant first).
  std::vector<int> first(order_);
  std::int64_t c = ctx;
  for (int i = order_ - 1; i >= 0; --i) {
    first[i] = int(c % vocab_);
    c /= vocab_;
  }
  for (int i = 0; i < length; ++i) {
    if (i < order_) {
      out[i] = first[i];
      continue;
    }
    out[i] = next(ctx, u(i));
    ctx = (ctx * vocab_) % contexts_ + out[i];
  }
}

std::optional<double> MarkovSource::loss_floor(int seq) const {
  // Targets are tokens 1 .. seq of a (seq + 1)-token sequence.
  double sum = 0;
  for (int t = 1; t <= seq; ++t)
    sum += t < order_ ? prefix_cond_entropy_[t - 1] : entropy_rate_;
  return sum / seq;
}

std::string MarkovSource::describe() const {
  std::ostringstream os;
  os << "markov(order=" << order_ << ", branching=" << branching_ << ", vocab=" << vocab_
     << ", seed=" << seed_ << ", entropy rate " << entropy_rate_ << " nats/token)";
  return os.str();
}

}  // namespace mini5d::data
