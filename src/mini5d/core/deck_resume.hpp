// SPDX-License-Identifier: BSD-3-Clause
// What a resume may change. Every deck field has one class (the table in
// deck_resume.cpp, documented in docs/checkpoints.md): the fields that decide what is
// computed must match the deck stored in the checkpoint, or the resumed run trains
// another model on other data while looking like a continuation.
#pragma once
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"

namespace mini5d {

enum class ResumeClass {
  MustMatch,  // the model, the data and the arithmetic: a change is refused
  MayChange,  // the optimiser's schedule and hyper-parameters: reported as changed
  Layout,     // how the same computation is split (resharding): reported as changed
  Run,        // where output goes and when to stop or save: neither compared nor reported
};

// The class of "section.field"; a field missing from the table (a new one) must match.
ResumeClass resume_class(const std::string& key);

// The fields the table names, in its order (for the test that every field has a class).
std::vector<std::string> resume_classified_fields();

struct ResumeDiff {
  std::vector<std::string> refused;  // "model.heads is 4 in the checkpoint, 2 in the deck"
  std::vector<std::string> changed;  // "resume: train.lr changed 0.001 -> 0.0005"
};

// Compares every field of `now` with the deck the checkpoint was written with.
ResumeDiff compare_for_resume(const Deck& stored, const Deck& now);

}  // namespace mini5d
