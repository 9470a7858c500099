// SPDX-License-Identifier: BSD-3-Clause
// `mini5d topo` (topo_command.hpp). Every rank discovers its own node; rank 0 gathers
// one text block per rank and prints, so the output reads the same at any rank count.
#include "mini5d/commands/topo_command.hpp"

#include <algorithm>
#include <sstream>

#include "mini5d/core/deck.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/grid/layout_rules.hpp"
#include "mini5d/topology/binding.hpp"
#include "mini5d/topology/membership.hpp"
#include "mini5d/topology/node.hpp"
#include "mini5d/comm/agreement.hpp"
#include "mini5d/topology/placement.hpp"

namespace mini5d::commands {

using namespace topology;  // the command presents what topology/ finds
namespace {

// First line: the rank's binding; further lines: its notes.
std::string rank_block(const NodeTopology& node, const NodeMembership& m) {
  const BindReport rep = bind_this_rank(node, m, BindOptions{false, false});
  std::ostringstream os;
  os << "  rank " << m.rank << "  node " << m.node << " (" << node.hostname << ")  local " << m.local_rank << ": "
     << format_binding(node, rep.binding) << ", " << rep.blas_threads << " BLAS thread"
     << (rep.blas_threads == 1 ? "" : "s") << "\n";
  for (const auto& n : rep.notes) os << n << "\n";
  return os.str();
}

// Binding lines as they are, notes once each (most are the same on every rank).
void print_blocks(std::ostream& out, const std::vector<std::string>& blocks) {
  std::vector<std::string> notes;
  for (const auto& b : blocks) {
    std::istringstream is(b);
    std::string line;
    std::getline(is, line);
    out << line << "\n";
    while (std::getline(is, line))
      if (std::find(notes.begin(), notes.end(), line) == notes.end()) notes.push_back(line);
  }
  for (const auto& n : notes) out << "  note: " << n << "\n";
}

}  // namespace

int topo_command(MPI_Comm comm, const std::string& deck_path, const std::vector<std::string>& overrides,
                 std::ostream& out, bool force_placement) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const bool have_deck = !deck_path.empty() || !overrides.empty();
  const Deck deck = deck_path.empty() ? parse_deck("", "built-in default deck", overrides)
                                      : load_deck(deck_path, overrides);
  const ParallelConfig& par = deck.parallel;
  force_placement = force_placement || par.force_placement;
  const int per_node = have_deck ? par.ranks_per_node : 0;
  // Every rank reads the same deck, so every rank throws here together.
  if (have_deck && size > 1)
    if (auto r = grid::rank_count_problem(deck, size); !r.empty()) throw InputError(r);
  const NodeTopology node = discover();

  std::vector<int> node_of_rank;
  std::vector<std::string> blocks, node_lines;
  std::string how;
  if (size > 1) {
    const NodeMembership m = node_membership(comm, per_node);
    node_of_rank = m.node_of_rank;
    blocks = comm::allgather_strings(comm, {rank_block(node, m)});
    node_lines = comm::allgather_strings(comm, {m.local_rank == 0 && m.node > 0
                                          ? "node " + std::to_string(m.node) + " " + node.hostname + ": " + summary(node)
                                          : ""});
    how = m.virtual_nodes ? "virtual nodes of parallel.ranks_per_node=" + std::to_string(per_node) + " ranks"
                          : "ranks sharing memory (MPI_COMM_TYPE_SHARED)";
  } else {
    // One process: predict the deck's layout with every node like this one.
    const int ranks = have_deck ? par.ranks() : 1;
    const int cut = per_node > 0 ? per_node : ranks;
    node_of_rank = virtual_node_ids(ranks, cut);
    how = per_node > 0 ? "predicted: virtual nodes of parallel.ranks_per_node=" + std::to_string(per_node) + " ranks"
                       : "predicted: all ranks on this node (set parallel.ranks_per_node to model a cluster)";
    for (int r = 0; r < cut; ++r) blocks.push_back(rank_block(node, membership_from_ids(node_of_rank, r, per_node > 0)));
  }
  if (rank != 0) {
    if (have_deck) check_placement(placement_table(par, node_of_rank), force_placement);
    return 0;
  }
  const int nodes = *std::max_element(node_of_rank.begin(), node_of_rank.end()) + 1;
  out << "# mini5d topo\n" << describe(node);
  for (const auto& l : node_lines)
    if (!l.empty()) out << l << "\n";
  out << "nodes: " << nodes << ", " << how << "\n";
  out << "bindings (computed, not applied; mini5d train binds" << (size == 1 && nodes > 1 ? "; node 0 shown, the others alike" : "")
      << "):\n";
  print_blocks(out, blocks);
  if (have_deck) {
    out << "layout: d=" << par.d << " p=" << par.p << " c=" << par.c << " e=" << par.e << " t=" << par.t << "\n";
    const PlacementTable table = placement_table(par, node_of_rank);
    out << table << std::flush;
    check_placement(table, force_placement);
  }
  out << std::flush;
  return 0;
}

}  // namespace mini5d::commands
