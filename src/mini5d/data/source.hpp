// SPDX-License-Identifier: BSD-3-Clause
// A data source hands out token sequences as a pure function of
// (seed, step, global sequence index): no iterator state, so every layout of ranks
// trains on exactly the same sequences, and a resumed run continues exactly where the
// interrupted one stopped.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"

namespace mini5d::data {

// What a long table build tells its caller. `poll` is called every few hundred
// milliseconds of work and may throw to stop the build (a stop signal); `note` gets a
// progress line about every 10 s once the build has run for 10 s. Either may be empty.
struct BuildHooks {
  std::function<void()> poll;
  std::function<void(const std::string&)> note;
};

class Source {
 public:
  virtual ~Source() = default;
  // Writes `length` tokens of sequence `index` of step `step` to out.
  virtual void sequence(std::uint64_t step, std::uint64_t index, int length, int* out) const = 0;
  virtual std::string describe() const = 0;
  // The lowest achievable mean loss per predicted token (nats), when it is known.
  virtual std::optional<double> loss_floor(int seq) const { (void)seq; return std::nullopt; }
  // Largest token id + 1 this source can produce.
  virtual int vocab() const = 0;
  // Host bytes the source holds (tables, the token file), for the memory ledger.
  virtual std::int64_t memory_bytes() const = 0;
};

// Builds the source the deck asks for; throws InputError for a bad data file. A Markov
// table's build calls `hooks` (it can take minutes at 2^24 contexts).
std::unique_ptr<Source> make_source(const Deck& deck, const BuildHooks& hooks = {});

// Host bytes make_source(deck) will hold at its peak, from the deck alone (0 for the
// file sources, which map their file instead of reading it).
double predicted_source_bytes(const Deck& deck);

// Fills a micro-batch: `count` sequences starting at global index `first`, as
// inputs [count, seq] and next-token targets [count, seq] (row-major).
void fill_batch(const Source& src, std::uint64_t step, std::uint64_t first, int count, int seq,
                std::vector<int>& inputs, std::vector<int>& targets);

// The training loop's sampler: writes this rank's tokens of `count` sequences from global
// index `first` straight into inputs and targets ([count, positions.size()] each,
// row-major), keeping of every sequence of `seq` tokens only the positions listed
// (context parallelism gives a rank two chunks of each sequence; all of 0..seq-1
// otherwise). `scratch` holds one sequence at a time.
void sample_tokens(const Source& src, std::uint64_t step, std::uint64_t first, int count, int seq,
                   const std::vector<int>& positions, std::vector<int>& scratch, int* inputs, int* targets);

}  // namespace mini5d::data
