// SPDX-License-Identifier: BSD-3-Clause
// Validity rules of a layout. They follow docs/parallelism.md so that every plan the planner
// prints is one the runtime accepts; the redundancy rules only keep the search from
// listing the same plan twice under different names.
#include "mini5d/plan/layout.hpp"

#include <sstream>

namespace mini5d::plan {

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

const char* to_string(Schedule s) {
  switch (s) {
    case Schedule::gpipe: return "gpipe";
    case Schedule::one_f_one_b: return "1f1b";
    case Schedule::interleaved: return "interleaved";
  }
  return "?";
}

bool parse_recompute(const std::string& s, Recompute& out) {
  if (s == "none") return out = Recompute::none, true;
  if (s == "selective") return out = Recompute::selective, true;
  if (s == "full") return out = Recompute::full, true;
  return false;
}

bool parse_schedule(const std::string& s, Schedule& out) {
  if (s == "1f1b") return out = Schedule::one_f_one_b, true;
  if (s == "gpipe") return out = Schedule::gpipe, true;
  if (s == "interleaved") return out = Schedule::interleaved, true;
  return false;
}

const char* axis_name(Axis a) {
  switch (a) {
    case Axis::d: return "d";
    case Axis::p: return "p";
    case Axis::c: return "c";
    case Axis::e: return "e";
    case Axis::t: return "t";
  }
  return "?";
}

long long axis_stride(const Layout& l, Axis a) {
  switch (a) {
    case Axis::t: return 1;
    case Axis::e: return l.t;
    case Axis::c: return 1LL * l.t * l.e;
    case Axis::p: return 1LL * l.t * l.e * l.c;
    case Axis::d: return 1LL * l.t * l.e * l.c * l.p;
  }
  return 1;
}

int axis_degree(const Layout& l, Axis a) {
  switch (a) {
    case Axis::d: return l.d;
    case Axis::p: return l.p;
    case Axis::c: return l.c;
    case Axis::e: return l.e;
    case Axis::t: return l.t;
  }
  return 1;
}

std::vector<std::string> check_layout(const ModelDesc& m, const TrainDesc& tr,
                                      const ClusterDesc& cl, const Layout& l,
                                      const RuleOptions& opt) {
  std::vector<std::string> bad;
  auto why = [&](const std::string& s) { bad.push_back(s); };
  const std::string T = "t=" + std::to_string(l.t);
  if (l.d < 1 || l.t < 1 || l.p < 1 || l.c < 1 || l.e < 1 || l.micro_batch < 1 ||
      l.accumulation < 1 || l.virtual_stages < 1) {
    why("degrees, micro-batch, accumulation and virtual stages must be >= 1");
    return bad;
  }
  if (l.ranks() != cl.devices())
    why("d*t*p*c*e = " + std::to_string(l.ranks()) + " but the cluster has " +
        std::to_string(cl.devices()) + " devices");
  if (m.heads % l.t) why(T + " does not divide heads=" + std::to_string(m.heads));
  if (m.ffn % l.t) why(T + " does not divide ffn=" + std::to_string(m.ffn));
  if (m.vocab % l.t) why(T + " does not divide vocab=" + std::to_string(m.vocab));
  if (!opt.allow_cross_node_tp && cl.devices_per_node % l.t)
    why(T + " does not fit inside a node of " + std::to_string(cl.devices_per_node) +
        " devices (tensor groups must not cross nodes)");
  const long long pv = 1LL * l.p * l.virtual_stages;
  if (m.layers % pv)
    why("p*virtual_stages=" + std::to_string(pv) + " does not divide layers=" +
        std::to_string(m.layers));
  if (l.c > 1 && m.seq % (2LL * l.c))
    why("c=" + std::to_string(l.c) + ": seq=" + std::to_string(m.seq) +
        " is not a multiple of 2c (zig-zag ring attention)");
  if (l.sp && (m.seq % l.c || (m.seq / l.c) % l.t))
    why("sequence parallelism: seq/c=" + std::to_string(m.seq / l.c) +
        " is not a multiple of " + T);
  if (l.e > 1 && !m.moe()) why("e=" + std::to_string(l.e) + " needs a mixture-of-experts model");
  if (m.moe() && m.experts % l.e)
    why("e=" + std::to_string(l.e) + " does not divide experts=" + std::to_string(m.experts));
  // mini5d splits the experts over e x t (each tensor rank routes its own
  // sequence-parallel rows): e*t divides the experts, and SP is on.
  if (m.moe() && l.t > 1 && m.experts % l.e == 0 && m.experts % (1LL * l.e * l.t) != 0)
    why("e*t=" + std::to_string(l.e * l.t) + " does not divide experts=" + std::to_string(m.experts) +
        " (experts are split over e x t)");
  if (m.moe() && l.t > 1 && !l.sp) why("t > 1 with experts needs sequence parallelism");
  if (m.moe() && (m.top_k < 1 || m.top_k > m.experts))
    why("top_k must be in 1..experts");
  if (l.zero < 0 || l.zero > 3) why("ZeRO stage must be 0..3");
  if (l.virtual_stages > 1 && l.p == 1) why("virtual stages need p > 1");
  if (l.schedule == Schedule::interleaved && l.accumulation % l.p)
    why("interleaved 1F1B needs micro-batches per step (" + std::to_string(l.accumulation) +
        ") to be a multiple of p=" + std::to_string(l.p));
  if ((l.schedule == Schedule::interleaved) != (l.virtual_stages > 1))
    why("the interleaved schedule and virtual_stages > 1 go together");
  const long long batch = 1LL * l.micro_batch * l.accumulation * l.d * l.e;
  if (tr.global_batch > 0 && batch != tr.global_batch)
    why("micro_batch*accumulation*d*e = " + std::to_string(batch) + " != global batch " +
        std::to_string(tr.global_batch));
  if (opt.skip_redundant) {
    if (l.zero > 0 && l.dense_group() == 1) why("redundant: ZeRO over a group of one rank");
    if (l.sp && l.t == 1) why("redundant: sequence parallelism with t=1");
    if (l.schedule == Schedule::gpipe && l.p == 1) why("redundant: GPipe with p=1");
  }
  return bad;
}

std::string describe(const Layout& l) {
  std::ostringstream o;
  o << "d=" << l.d << " t=" << l.t << " p=" << l.p << " c=" << l.c << " e=" << l.e
    << " mb=" << l.micro_batch << " m=" << l.accumulation << " ZeRO-" << l.zero
    << " recompute=" << to_string(l.recompute);
  if (l.virtual_stages > 1) o << " v=" << l.virtual_stages;
  if (l.sp) o << " SP";
  if (l.schedule == Schedule::gpipe) o << " gpipe";
  return o.str();
}

}  // namespace mini5d::plan
