// SPDX-License-Identifier: BSD-3-Clause
// --json: the search result as a versioned JSON record (schema "mini5d-plan/1"), with
// the inputs, every top plan's layout, memory by category and time split, so that
// scripts never have to parse the table.
#pragma once
#include <ostream>
#include <string>

#include "mini5d/plan/search/search.hpp"

namespace mini5d::plan {

std::string json_escape(const std::string& s);

// With `given` (--layout/--deck) the record adds "given": that plan, its rank among
// the fitting plans ("position", 1-based; 0 when it does not fit) and "slower_than_best".
void write_json(std::ostream& os, const ModelDesc& m, const TrainDesc& tr, const ClusterDesc& cl,
                const SearchResult& r, const Plan* given = nullptr);

}  // namespace mini5d::plan
