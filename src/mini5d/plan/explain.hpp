// SPDX-License-Identifier: BSD-3-Clause
// --explain: why each degree of the chosen plan is what it is, in the terms of the
// seed articles (chattiest axis on the fastest link, pipeline only as deep as memory
// needs, everything else to data parallelism), with the predicted cost of the
// neighbouring choices and what the runner-up trades.
#pragma once
#include <ostream>

#include "mini5d/plan/search.hpp"

namespace mini5d::plan {

void explain(std::ostream& os, const ModelDesc& m, const TrainDesc& tr, const ClusterDesc& cl,
             const SearchResult& r, const SearchOptions& o);

}  // namespace mini5d::plan
