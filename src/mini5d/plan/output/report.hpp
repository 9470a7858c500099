// SPDX-License-Identifier: BSD-3-Clause
// The human-readable output: a header naming model, cluster and batch, and the table
// of the top plans with their degrees, knobs, memory and time split.
#pragma once
#include <ostream>
#include <string>

#include "mini5d/plan/search/search.hpp"

namespace mini5d::plan {

void print_header(std::ostream& os, const ModelDesc& m, const TrainDesc& tr,
                  const ClusterDesc& cl);
void print_table(std::ostream& os, const SearchResult& r, const ClusterDesc& cl);
// The one-paragraph breakdown of a single plan (memory by category, time by part).
void print_plan_detail(std::ostream& os, const Plan& p, const ClusterDesc& cl);
// The same under another heading (e.g. "given plan" for --layout/--deck).
void print_plan_detail(std::ostream& os, const Plan& p, const ClusterDesc& cl,
                       const std::string& label);
// When nothing fits: how much memory is missing at the best sharding.
void print_does_not_fit(std::ostream& os, const SearchResult& r, const ClusterDesc& cl);

}  // namespace mini5d::plan
