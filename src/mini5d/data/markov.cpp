// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/data/markov.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "mini5d/core/counter_rng.hpp"

namespace mini5d::data {

namespace {
constexpr std::uint64_t kTableStream = 0x7461626c65ULL;   // "table"
constexpr std::uint64_t kSampleStream = 0x73616d706cULL;  // "sampl"

using Clock = std::chrono::steady_clock;

// Calls the hooks at a bounded rate from inside the build's loops.
class BuildPacer {
 public:
  explicit BuildPacer(const BuildHooks& hooks) : hooks_(hooks), start_(Clock::now()), polled_(start_), noted_(start_) {}
  // `what` is evaluated only when a progress line is due.
  template <class What>
  void tick(What what) {
    const auto now = Clock::now();
    if (now - polled_ < std::chrono::milliseconds(200)) return;
    polled_ = now;
    if (hooks_.poll) hooks_.poll();
    if (hooks_.note && now - noted_ >= std::chrono::seconds(10)) {
      noted_ = now;
      hooks_.note(what(std::chrono::duration<double>(now - start_).count()));
    }
  }

 private:
  const BuildHooks& hooks_;
  Clock::time_point start_, polled_, noted_;
};

double entropy(const std::vector<double>& p) {
  double h = 0;
  for (double x : p)
    if (x > 0) h -= x * std::log(x);
  return h;
}
}  // namespace

double MarkovSource::table_bytes(int vocab, int order, int branching) {
  const double contexts = std::pow(double(vocab), order);
  // succ_ (int) and cdf_ (double) per entry; pi_, pi_cdf_ and the iteration's second
  // vector (double) per context; the shuffle's permutation.
  return contexts * branching * double(sizeof(int) + sizeof(double)) + contexts * 3.0 * sizeof(double) +
         double(vocab) * sizeof(int);
}

MarkovSource::MarkovSource(int vocab, int order, int branching, std::uint64_t seed, const BuildHooks& hooks)
    : vocab_(vocab), order_(order), branching_(branching), seed_(seed) {
  contexts_ = 1;
  for (int i = 0; i < order; ++i) contexts_ *= vocab;
  succ_.resize(contexts_ * branching);
  cdf_.resize(contexts_ * branching);
  // Transition table: distinct successors by a partial Fisher-Yates shuffle, and
  // weights from Exp(1) draws (a flat Dirichlet), sharpened by squaring so the rows
  // are not all near-uniform.
  std::vector<int> perm(vocab), picks(branching);
  std::vector<double> w(branching);
  for (int i = 0; i < vocab; ++i) perm[i] = i;
  std::uint64_t draw = 0;
  BuildPacer pace(hooks);
  for (std::int64_t c = 0; c < contexts_; ++c) {
    if ((c & 1023) == 0)
      pace.tick([&](double s) {
        char line[160];
        std::snprintf(line, sizeof line, "data: Markov table: %lld of %lld contexts drawn after %.0f s",
                      static_cast<long long>(c), static_cast<long long>(contexts_), s);
        return std::string(line);
      });
    double total = 0;
    for (int j = 0; j < branching; ++j) {
      const int pick = j + int(rng::key(seed, kTableStream, draw++) % std::uint64_t(vocab - j));
      std::swap(perm[j], perm[pick]);
      picks[j] = pick;
      succ_[c * branching + j] = perm[j];
      const double e = -std::log(rng::uniform(rng::key(seed, kTableStream, draw++)));
      w[j] = e * e;
      total += w[j];
    }
    // Undo the swaps, newest first: every context starts from the identity again,
    // in O(branching) instead of resetting all `vocab` entries.
    for (int j = branching - 1; j >= 0; --j) std::swap(perm[j], perm[picks[j]]);
    double acc = 0;
    for (int j = 0; j < branching; ++j) {
      acc += w[j] / total;
      cdf_[c * branching + j] = acc;
    }
    cdf_[c * branching + branching - 1] = 1.0;
  }
  derive(hooks);
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
  derive({});
}

void MarkovSource::derive(const BuildHooks& hooks) {
  const int branching = branching_;
  // Stationary distribution by power iteration on the lazy chain (P + I) / 2, which
  // has the same fixed points and converges even when P is periodic.
  pi_.assign(contexts_, 1.0 / double(contexts_));
  std::vector<double> nxt(contexts_);
  constexpr double kConverged = 1e-15;  // L1 distance between iterates
  BuildPacer pace(hooks);
  double first_diff = 0;
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
    if (diff < kConverged) break;
    // The distance shrinks geometrically: the rate since the first iteration gives
    // the iterations, and so the time, still to go.
    if (it == 0) first_diff = diff;
    pace.tick([&](double s) {
      const double per_it = it > 0 ? std::log(diff / first_diff) / it : 0;
      const double left = per_it < 0 ? std::log(kConverged / diff) / per_it * s / (it + 1) : -1;
      char line[200];
      if (left >= 0)
        std::snprintf(line, sizeof line,
                      "data: Markov table: stationary distribution, iteration %d, distance %.1e (done at %.0e), "
                      "about %.0f s left",
                      it + 1, diff, kConverged, left);
      else
        std::snprintf(line, sizeof line, "data: Markov table: stationary distribution, iteration %d, distance %.1e",
                      it + 1, diff);
      return std::string(line);
    });
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
