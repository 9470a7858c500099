// SPDX-License-Identifier: BSD-3-Clause
// The rank line of a layout the user gave (--layout, --deck, --validate --rank): where
// the search placed it (search/given_layout.hpp's rank_of_given) and what the fastest
// plan does better, in the words of --explain.
#pragma once
#include <ostream>

#include "mini5d/plan/search/search.hpp"

namespace mini5d::plan {

// "rank   #3 of 5120 fitting plans; 4.1% slower than #1 (d=.. t=..): bubble +.., tp +.."
// (or "fastest", or "does not fit ...").
void print_given_rank(std::ostream& os, const Plan& given, const SearchResult& r,
                      const ClusterDesc& cl);

}  // namespace mini5d::plan
