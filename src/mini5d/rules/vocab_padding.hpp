// SPDX-License-Identifier: BSD-3-Clause
// Vocabulary padding (Megatron's rule), written once for the runtime and the planner.
// Tensor parallelism splits the token embedding and the LM head by vocabulary rows, so
// the rows must divide by t; a vocabulary such as GPT-2's 50257 does not. The model
// then allocates `padded_vocab` rows: the first `vocab` are the model's, the rest are
// padding that is initialised to zero, is never a target, is masked out of the softmax
// (so its gradient is zero and it stays zero) and is left out of checkpoints and of the
// parameter checksum (docs/parallelism.md, "Vocabulary padding").
//
// model.vocab_pad_to = N >= 1 pads to a multiple of N*t (N = 1: only to a multiple of
// t, so a vocabulary t divides is not padded at all: the default, which keeps every
// existing deck's shapes, memory figures and losses); 0 asks for Megatron's automatic
// multiple of 128*t (GEMM-friendly row counts).
#pragma once

namespace mini5d {

constexpr long long kAutoVocabPadTo = 128;  // model.vocab_pad_to = 0

inline long long padded_vocab(long long vocab, long long pad_to, long long t) {
  const long long unit = (pad_to == 0 ? kAutoVocabPadTo : pad_to) * (t < 1 ? 1 : t);
  return (vocab + unit - 1) / unit * unit;
}

}  // namespace mini5d
