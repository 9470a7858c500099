// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/data/source.hpp"

#include "mini5d/data/file_sources.hpp"
#include "mini5d/data/markov.hpp"

namespace mini5d::data {

std::unique_ptr<Source> make_source(const Deck& deck, const BuildHooks& hooks) {
  const auto& d = deck.data;
  if (d.source == DataSource::markov)
    return std::make_unique<MarkovSource>(deck.model.vocab, d.markov_order, d.markov_branching, d.seed, hooks);
  if (d.source == DataSource::text) return load_text_file(d.path, deck.model.seq, d.seed);
  return load_token_file(d.path, deck.model.seq, deck.model.vocab, d.seed);
}

double predicted_source_bytes(const Deck& deck) {
  const auto& d = deck.data;
  return d.source == DataSource::markov ? MarkovSource::table_bytes(deck.model.vocab, d.markov_order, d.markov_branching) : 0.0;
}

void fill_batch(const Source& src, std::uint64_t step, std::uint64_t first, int count, int seq,
                std::vector<int>& inputs, std::vector<int>& targets) {
  // Whole sequences: the training sampler with every position kept.
  std::vector<int> every(static_cast<std::size_t>(seq)), scratch;
  for (int t = 0; t < seq; ++t) every[std::size_t(t)] = t;
  inputs.resize(std::size_t(count) * seq);
  targets.resize(std::size_t(count) * seq);
  sample_tokens(src, step, first, count, seq, every, scratch, inputs.data(), targets.data());
}

void sample_tokens(const Source& src, std::uint64_t step, std::uint64_t first, int count, int seq,
                   const std::vector<int>& positions, std::vector<int>& scratch, int* inputs, int* targets) {
  scratch.resize(std::size_t(seq) + 1);
  const std::size_t n = positions.size();
  for (int b = 0; b < count; ++b) {
    src.sequence(step, first + std::uint64_t(b), seq + 1, scratch.data());
    int* in = inputs + std::size_t(b) * n;
    int* tg = targets + std::size_t(b) * n;
    for (std::size_t k = 0; k < n; ++k) {
      in[k] = scratch[std::size_t(positions[k])];
      tg[k] = scratch[std::size_t(positions[k]) + 1];
    }
  }
}

}  // namespace mini5d::data
