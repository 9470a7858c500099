// SPDX-License-Identifier: BSD-3-Clause
// Evaluating a layout the user gives (--layout SPEC or --deck FILE) instead of only
// the best one found: the same breakdown, and its place among the alternatives with
// the parts of the step that make the difference ("#37 of 5120, 18% slower than #1:
// bubble +40 ms, tp +12 ms").
//
// SPEC is comma-separated key=value: d, t, p, c, e (degrees), mb (micro-batch), m
// (micro-batches per step), zero, recompute (none|selective|full), v (virtual stages),
// sp (on|off), schedule (1f1b|gpipe|interleaved). Omitted keys take the runtime's
// defaults (t=p=c=e=1, mb=1, zero=0, recompute=none, v=1, SP on when t > 1, schedule
// interleaved when v > 1 else 1f1b); an omitted d takes the devices the others leave,
// and an omitted m the rest of the global batch.
#pragma once
#include <cstddef>
#include <optional>
#include <string>

#include "mini5d/plan/search/search.hpp"

namespace mini5d::plan {

// Which keys the spec set (an omitted d or m is derived once the cluster is known).
struct LayoutSpec {
  Layout layout;
  bool has_d = false, has_m = false;
};

// Parses SPEC; throws InputError("--layout: ...") naming the bad key or value.
LayoutSpec parse_layout_spec(const std::string& spec);

// Fills an omitted d from the device count and an omitted m from the global batch
// (left unchanged when they do not divide; check_layout then says why).
Layout complete_layout(const LayoutSpec& s, const TrainDesc& tr, long long devices);

// Where a plan stands among the fitting alternatives of a search run with
// SearchOptions::given set to it.
struct GivenRank {
  std::size_t position = 0;  // 1-based: plans ranking before it + 1
  std::size_t fitting = 0;   // fitting plans searched
};
// (Its line in the outputs: print_given_rank, output/given_rank.hpp.)
GivenRank rank_of_given(const SearchResult& r);

}  // namespace mini5d::plan
