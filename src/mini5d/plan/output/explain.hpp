// SPDX-License-Identifier: BSD-3-Clause
// --explain: why each degree of the chosen plan is what it is, in the terms of the
// seed articles (chattiest axis on the fastest link, pipeline only as deep as memory
// needs, everything else to data parallelism), with the predicted cost of the
// neighbouring choices and what the runner-up trades.
#pragma once
#include <ostream>
#include <string>

#include "mini5d/plan/search/search.hpp"

namespace mini5d::plan {

// The axis-by-axis part for any plan (e.g. a layout the user gave): each neighbouring
// choice is re-planned and quoted as the change from `p`.
void explain_plan(std::ostream& os, const ModelDesc& m, const TrainDesc& tr,
                  const ClusterDesc& cl, const Plan& p, const SearchOptions& o);

// The biggest changes in the time split from a to b, e.g. "tp +20.1 ms, bubble -3.2 ms".
std::string time_split_delta(const Plan& a, const Plan& b);

void explain(std::ostream& os, const ModelDesc& m, const TrainDesc& tr, const ClusterDesc& cl,
             const SearchResult& r, const SearchOptions& o);

}  // namespace mini5d::plan
