// SPDX-License-Identifier: BSD-3-Clause
// Pipeline schedules as data (docs/architecture.md): a pure function of (kind, p, v, m, stage)
// gives the ordered actions one pipeline rank executes in a step: forward or backward
// of micro-batch i on its local chunk j, and the receives and sends of the boundary
// tensors they need. No MPI, no model: the executor (parallel/pp/executor.hpp) runs the list
// against an abstract Stage, and the unit tests check the lists alone.
//
// Chunks are assigned round-robin, as in Megatron's interleaving: local chunk j of
// pipeline rank r is virtual stage j*p + r of the p*v virtual stages the model's depth
// is cut into. Activations go from virtual stage s to s+1 (rank r to r+1, and from the
// last rank back to the first for the next chunk), gradients the other way.
//
// The three kinds (mini5d::Schedule, rules/deck_choices.hpp) share one generator, Megatron's: a rank runs `warm-up` forwards,
// then alternates one forward and one backward, then drains the backwards. They
// differ in the warm-up and in how the micro-batches are grouped over the chunks
// (forward k runs chunk (k / G) % v on micro-batch (k / (G v)) G + k % G; backward k
// the chunks in reverse):
//   gpipe        every forward first (warm-up = m v), group G = m;
//   1f1b         warm-up p - stage - 1 (v = 1), or 2 (p - stage - 1) + (v - 1) G with
//                G = m: each chunk's micro-batches in one group;
//   interleaved  as 1f1b with v > 1 but G = p (needs m % p == 0): Megatron's
//                interleaved 1F1B, whose bubble is (p - 1) / (v m + p - 1).
#pragma once
#include <string>
#include <vector>

#include "mini5d/rules/deck_choices.hpp"

namespace mini5d::pp {

enum class Op { recv_forward, forward, send_forward, recv_backward, backward, send_backward };
const char* to_string(Op op);

struct Action {
  Op op;
  int mb = 0;     // micro-batch
  int chunk = 0;  // local chunk of this rank
  int peer = -1;  // pipeline rank sent to or received from (-1 for compute)
  bool compute() const { return op == Op::forward || op == Op::backward; }
};

struct Spec {
  Schedule kind = Schedule::one_f_one_b;  // the deck's parallel.schedule
  int p = 1;  // pipeline ranks
  int v = 1;  // chunks per rank
  int m = 1;  // micro-batches per step
};

// Why a spec cannot be scheduled (one line naming the deck fields), or "" if it can.
std::string problem(const Spec& s);

// Pipeline rank `stage`'s actions for one step, in order. Throws std::invalid_argument
// if problem(s) is not empty.
std::vector<Action> schedule(const Spec& s, int stage);

// Virtual stage of local chunk `chunk` on pipeline rank `stage`.
inline int virtual_stage(const Spec& s, int stage, int chunk) { return chunk * s.p + stage; }

// The bubble the formula predicts: (p - 1) / (m + p - 1) for GPipe and 1F1B with one
// chunk per rank, (p - 1) / (v m + p - 1) with v chunks (interleaved, and the other
// two when m >= p, where no chunk waits for the previous one to come round the ring).
double formula_bubble(const Spec& s);

// Most (micro-batch, chunk) pairs whose forward has run and backward not, at any
// point of a rank's list: the activations it must hold at once. `per_chunk` (if not
// null) gets each chunk's own peak.
int peak_in_flight(const std::vector<Action>& actions, int v, std::vector<int>* per_chunk = nullptr);
// The same peak with each pair weighted by its chunk's `weights[chunk]` (its blocks,
// when a stage's chunks hold different numbers of blocks): the block activation sets
// the rank must hold at once.
long long peak_in_flight_weighted(const std::vector<Action>& actions, const std::vector<long long>& weights);

// One line per action, e.g. "F3 c1" / "recv_forward mb3 c1 from 0" (for printing).
std::string describe(const Action& a);

}  // namespace mini5d::pp
