// SPDX-License-Identifier: BSD-3-Clause
// The layouts the MPI tests train and the deck of each, shared so that every axis test
// describes a layout the same way: the five degrees and the knobs the tests vary, named
// by a short spec ("d2 c2 zero3", "t2 nosp recompute=full"). The deck keeps the global
// batch of kGlobalBatch sequences per step in every layout, so each one can be compared
// with the single-rank run of the same deck. A knob left unset keeps the deck's value:
// the tests override only what they vary.
#pragma once
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"

namespace mini5d::test {

constexpr int kGlobalBatch = 16;  // sequences per step, in every layout

struct Layout {
  int d = 1, t = 1, p = 1, c = 1, e = 1;  // the five degrees
  int zero = -1;                          // ZeRO stage; -1: the deck's
  int m = 0;                              // micro-batches per step; 0: p, one per stage
  int v = 0;                              // virtual stages per pipeline rank; 0: the deck's
  int layers = 0;                         // 0: the deck's
  std::optional<bool> sp;                 // sequence parallelism; unset: the deck's
  std::string recompute, schedule;        // empty: the deck's
  std::string stages;                     // parallel.stage_layers, "3,5"; empty: the deck's

  Layout() = default;
  // From a spec of space-separated items: d2 t2 p2 c2 e2 (degrees), zero1, m4, v2,
  // layers4, sp or nosp, recompute=<mode>, schedule=<name>, stages=3,5; name() writes the same, or
  // "1 rank" where nothing is set. Implicit, so that a list of layouts reads as a list
  // of specs.
  Layout(const char* spec) {
    std::istringstream in(spec);
    for (std::string item; in >> item;) set(item);
  }

  int ranks() const { return d * t * p * c * e; }
  int accumulation() const { return m > 0 ? m : p; }

  std::string name() const {
    std::string n;
    auto add = [&n](const std::string& s) { n += (n.empty() ? "" : " ") + s; };
    for (const auto& [axis, k] : {std::pair{"d", d}, {"t", t}, {"p", p}, {"c", c}, {"e", e}})
      if (k > 1) add(axis + std::to_string(k));
    if (zero >= 0) add("zero" + std::to_string(zero));
    if (m > 0) add("m" + std::to_string(m));
    if (v > 0) add("v" + std::to_string(v));
    if (layers > 0) add("layers" + std::to_string(layers));
    if (sp) add(*sp ? "sp" : "nosp");
    if (!recompute.empty()) add("recompute=" + recompute);
    if (!schedule.empty()) add("schedule=" + schedule);
    if (!stages.empty()) add("stages=" + stages);
    return n.empty() ? "1 rank" : n;
  }

 private:
  void set(const std::string& item) {
    if (item == "sp" || item == "nosp") {
      sp = item == "sp";
      return;
    }
    const auto eq = item.find('=');
    const std::string key = item.substr(0, eq);
    if (eq != std::string::npos && (key == "recompute" || key == "schedule" || key == "stages")) {
      (key == "recompute" ? recompute : key == "schedule" ? schedule : stages) = item.substr(eq + 1);
      return;
    }
    const auto digit = item.find_first_of("0123456789");
    if (eq == std::string::npos && digit != std::string::npos && digit > 0 &&
        item.find_first_not_of("0123456789", digit) == std::string::npos) {
      const std::string name = item.substr(0, digit);
      for (auto [known, field] : {std::pair{"d", &d}, {"t", &t}, {"p", &p}, {"c", &c}, {"e", &e},
                                  {"zero", &zero}, {"m", &m}, {"v", &v}, {"layers", &layers}})
        if (name == known) {
          *field = std::stoi(item.substr(digit));
          return;
        }
    }
    throw std::invalid_argument("layout spec: unknown item '" + item + "'");
  }
};

// The deck at `path` in layout l for `steps` steps, then `extra` overrides. Every
// layout trains kGlobalBatch sequences per step: micro_batch = kGlobalBatch / (d e m)
// per rank (the tensor, pipeline and context ranks of a replica share its sequences).
inline Deck layout_deck(const std::string& path, const Layout& l, long steps,
                        const std::vector<std::string>& extra = {}) {
  std::vector<std::string> o = {"train.steps=" + std::to_string(steps),
                                "parallel.d=" + std::to_string(l.d),
                                "parallel.t=" + std::to_string(l.t),
                                "parallel.p=" + std::to_string(l.p),
                                "parallel.c=" + std::to_string(l.c),
                                "parallel.e=" + std::to_string(l.e),
                                "train.accumulation=" + std::to_string(l.accumulation()),
                                "train.micro_batch=" + std::to_string(kGlobalBatch / (l.d * l.e * l.accumulation()))};
  if (l.zero >= 0) o.push_back("parallel.zero=" + std::to_string(l.zero));
  if (l.v > 0) o.push_back("parallel.virtual_stages=" + std::to_string(l.v));
  if (l.layers > 0) o.push_back("model.layers=" + std::to_string(l.layers));
  if (l.sp) o.push_back(std::string("parallel.sp=") + (*l.sp ? "true" : "false"));
  if (!l.recompute.empty()) o.push_back("train.recompute=" + l.recompute);
  if (!l.schedule.empty()) o.push_back("parallel.schedule=" + l.schedule);
  if (!l.stages.empty()) o.push_back("parallel.stage_layers=" + l.stages);
  o.insert(o.end(), extra.begin(), extra.end());
  return load_deck(path, o);
}

// The decks the axis tests train (inputs/): tiny, and moe-tiny (tiny with 4 experts).
inline std::string input_deck(const std::string& name) { return std::string(MINI5D_SOURCE_DIR) + "/inputs/" + name; }
inline Deck tiny(const Layout& l, long steps, const std::vector<std::string>& extra = {}) {
  return layout_deck(input_deck("tiny.yaml"), l, steps, extra);
}
inline Deck moe_tiny(const Layout& l, long steps, const std::vector<std::string>& extra = {}) {
  return layout_deck(input_deck("moe-tiny.yaml"), l, steps, extra);
}

}  // namespace mini5d::test
