// SPDX-License-Identifier: BSD-3-Clause
// Outputs that would destroy an input of the same run. The report is renamed over its
// path and the trace written in place at the end of the run, so either given the path
// of the deck, the data file, the checkpoint being resumed, a file of checkpoint.dir
// (`latest`, a checkpoint, the lock) or the other output would replace it, after
// training. Found at start-up instead (docs/checkpoints.md, "Paths").
#pragma once
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"

namespace mini5d::train {

// One line per output that is an input or another output of this run ("" none),
// naming the field, both paths and what to do. Files are compared by device and inode
// where they exist (links and other spellings of a path find the same file), by the
// resolved absolute path where they do not yet. One rank; checkpoint.dir must exist.
std::vector<std::string> output_clash_problems(const Deck& deck);

}  // namespace mini5d::train
