// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/plan/validation/sanity_notes.hpp"

#include <cstdio>

#include "mini5d/plan/output/format.hpp"
#include "mini5d/plan/search/search.hpp"

namespace mini5d::plan {

std::vector<std::string> sanity_notes(const ModelDesc& m, const Plan* best) {
  std::vector<std::string> notes;
  const ParamCounts pc = count_params(m);
  if (pc.total > 0 && pc.position_embedding > kPositionShareWarn * pc.total)
    notes.push_back(m.source + ": the learned position table (seq " + std::to_string(m.seq) + " x d_model " +
                    std::to_string(m.d_model) + ") is " + pct(pc.position_embedding / pc.total) +
                    " of the model's parameters; is seq meant to be " + std::to_string(m.seq) +
                    "? (models this long use rotary positions, model.positions: rope, which have no table)");
  if (best && best->time.step > kStepSecondsWarn)
  {
    char hours[32];
    std::snprintf(hours, sizeof hours, "%.1f h", best->time.step / 3600);
    notes.push_back("the plan's step takes " + ms(best->time.step) + " (" + hours +
                    ") per optimizer step; check the global batch and the cluster size");
  }
  return notes;
}

}  // namespace mini5d::plan
