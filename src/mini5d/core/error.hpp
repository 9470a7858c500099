// SPDX-License-Identifier: BSD-3-Clause
// InputError: a problem with what the user gave us (deck, command line, data or
// checkpoint file). Its message is one line per problem, each naming the file (and
// line), the field and what is allowed; the app prints it once and exits non-zero.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace mini5d {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& msg) : std::runtime_error(msg) {}
  // One line per problem, the first kShownProblems of them: a deck of 400,000 bad keys
  // gets a readable message, not 400,000 lines.
  static constexpr std::size_t kShownProblems = 20;
  static InputError from_list(const std::vector<std::string>& problems) {
    std::string all;
    for (std::size_t i = 0; i < problems.size() && i < kShownProblems; ++i)
      all += (all.empty() ? "" : "\n") + problems[i];
    if (problems.size() > kShownProblems)
      all += "\n... and " + std::to_string(problems.size() - kShownProblems) + " more problems";
    return InputError(all);
  }
};

// AgreedError: a run-time failure (a full disk, an unwritable file) that every rank of
// the job found together and throws together, with the same text. The app prints it
// once and exits with status 1, cleanly: no rank is left waiting, so no MPI_Abort.
class AgreedError : public std::runtime_error {
 public:
  explicit AgreedError(const std::string& msg) : std::runtime_error(msg) {}
};

}  // namespace mini5d
