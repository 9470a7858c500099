// SPDX-License-Identifier: BSD-3-Clause
// The mini5d command line: the command, its deck and section.field=value overrides, the
// Kokkos options that ride along, and what only one command takes (calibrate's options,
// ckpt's paths). The usage lives here so that every command's refusal can end with it.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "mini5d/commands/calibrate_command.hpp"
#include "mini5d/core/deck.hpp"

namespace mini5d::commands {

extern const char* const kUsage;

struct CommandLine {
  std::string command, deck;
  std::vector<std::string> overrides;
  std::vector<std::string> kokkos;  // --kokkos-... options: Kokkos' own, read by Kokkos from argv
  CalibrateOptions calibrate;       // calibrate's --out, --base, --quick
  std::vector<std::string> paths;   // what follows "ckpt": paths, not a deck
};

// Throws InputError for no command, a second deck, or a calibrate option that is not one.
CommandLine parse_command_line(int argc, char** argv);

// The named deck with the overrides, or the built-in default deck when none is named.
Deck resolve_deck(const CommandLine& a);

// --help, -h or help as the command: the program's own help, answered before Kokkos
// starts (Kokkos would answer --help with its own).
bool asks_for_help(int argc, char** argv);
void print_help(std::ostream& os);

}  // namespace mini5d::commands
