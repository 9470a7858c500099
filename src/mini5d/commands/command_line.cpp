// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/commands/command_line.hpp"

#include "mini5d/core/error.hpp"
#include "mini5d/core/printable.hpp"

namespace mini5d::commands {

const char* const kUsage =
    "usage: mini5d train [DECK] [section.field=value ...] [resume=latest|PATH]\n"
    "       mini5d check DECK [section.field=value ...]\n"
    "       mini5d topo [DECK] [section.field=value ...]\n"
    "       mini5d ckpt info|verify PATH   (PATH: checkpoint directory or file)\n"
    "       mini5d ceilings [refresh | CLUSTER.yaml]   (sgemm and stream ceilings for the kernel table, cached)\n"
    "       mini5d calibrate [DECK] [--out FILE] [--base CLUSTER.yaml] [--quick]\n"
    "                        (measure this allocation's GEMMs, bandwidth and links into a planner cluster file)\n"
    "       mini5d deck-help | version\n";

namespace {

// ckpt takes paths, not a deck: everything but Kokkos' options is handed to it as given.
CommandLine ckpt_line(int argc, char** argv) {
  CommandLine a;
  a.command = argv[1];
  for (int i = 2; i < argc; ++i)
    (std::string(argv[i]).rfind("--kokkos-", 0) == 0 ? a.kokkos : a.paths).push_back(argv[i]);
  return a;
}

}  // namespace

CommandLine parse_command_line(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "ckpt") return ckpt_line(argc, argv);
  CommandLine a;
  if (argc < 2) throw InputError(std::string("no command given\n") + kUsage);
  a.command = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string s = argv[i];
    // "resume=latest" or "resume=PATH": shorthand for checkpoint.resume=...
    if (s.rfind("resume=", 0) == 0) s = "checkpoint." + s;
    if (a.command == "calibrate" && s.rfind("--", 0) == 0) {
      if (s == "--quick") {
        a.calibrate.quick = true;
        continue;
      }
      if ((s != "--out" && s != "--base") || i + 1 >= argc)
        throw InputError("command line: calibrate: \"" + printable(s) +
                         "\" is not an option (valid: --out FILE, --base CLUSTER.yaml, --quick)");
      (s == "--out" ? a.calibrate.out : a.calibrate.base) = argv[++i];
      continue;
    }
    // Kokkos reads its own options from argv when it starts (--help advertises them):
    // neither an override nor a deck. Kokkos judges their values (start_kokkos).
    if (s.rfind("--kokkos-", 0) == 0)
      a.kokkos.push_back(s);
    else if (s.find('=') != std::string::npos)
      a.overrides.push_back(s);
    else if (a.deck.empty())
      a.deck = s;
    else
      throw InputError("command line: unexpected argument \"" + printable(s) + "\" (one deck at most)\n" + kUsage);
  }
  return a;
}

Deck resolve_deck(const CommandLine& a) {
  if (a.deck.empty()) return parse_deck("", "built-in default deck", a.overrides);
  return load_deck(a.deck, a.overrides);
}

bool asks_for_help(int argc, char** argv) {
  if (argc < 2) return false;
  const std::string c = argv[1];
  return c == "--help" || c == "-h" || c == "help";
}

void print_help(std::ostream& os) {
  os << "mini5d: GPT-style training mini-app with data (ZeRO), tensor, pipeline, context and expert "
        "parallelism\n"
     << kUsage
     << "The deck's fields: mini5d deck-help. Documentation: README.md and docs/ in the source tree\n"
        "(docs/inputs.md: commands and decks; docs/outputs.md: what a run prints and writes).\n"
        "Kokkos' own options (--kokkos-...) follow the command; Kokkos lists them with --kokkos-help.\n";
}

}  // namespace mini5d::commands
