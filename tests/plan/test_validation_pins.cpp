// SPDX-License-Identifier: BSD-3-Clause
// A validation run's published knobs (mb, v, zero, recompute, sp): pinned, they are the
// only knobs costed; a pinned layout the memory model does not fit (by up to 1.5x) is
// still costed and marked, one far beyond is not costed; bad pins are one line naming the run and the key.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/plan/validation/validation.hpp"

using namespace mini5d::plan;
namespace fs = std::filesystem;

namespace {
// A source on a toy cluster of one 8-device node, in a folder of its own (the file
// names its cluster relative to ../clusters/).
struct Source {
  fs::path dir = fs::temp_directory_path() / ("mini5d-pins-" + std::to_string(::getpid()));
  Source(const std::string& memory_gib) {
    fs::create_directories(dir / "validation");
    fs::create_directories(dir / "clusters");
    std::ofstream(dir / "clusters" / "toy.yaml")
        << "nodes: 1\ndevices_per_node: 8\ndevice:\n  memory_gib: " << memory_gib
        << "\n  memory_bandwidth_gbs: 2000\n  peak_tflops: {bf16: 312}\nlinks:\n"
           "  intra_node: {bandwidth_gbs: 200, latency_us: 2}\n";
  }
  ~Source() { fs::remove_all(dir); }
  std::string write(const std::string& run, const std::string& tp = "t: 2, p: 2") const {
    const fs::path p = dir / "validation" / "src.yaml";
    std::ofstream(p) << "source: a test\ncluster: toy.yaml\npublished: step_s\nprecision: bf16\n"
                        "model: {vocab: 1000, d_model: 512, heads: 8, layers: 4, seq: 1024}\nruns:\n"
                        "  - {name: r, role: test, gpus: 8, "
                     << tp << ", batch: 16, step_s: 1.0" << run << "}\n";
    return p.string();
  }
  ValidationResult evaluate(const std::string& run, ValidationSet& v) const {
    v = load_validation_file(write(run));
    return evaluate_run(v.runs[0], load_cluster_file(v.cluster_file), v.options);
  }
  std::string error_of(const std::string& run, const std::string& tp = "t: 2, p: 2") const {
    try {
      load_validation_file(write(run, tp));
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
};
}  // namespace

TEST_CASE("published knobs are pinned: only they are costed", "[plan][validation]") {
  const Source s("80");
  ValidationSet v;
  const ValidationResult free = s.evaluate("", v);
  REQUIRE(free.plan);
  const ValidationResult pinned = s.evaluate(", mb: 2, v: 2, zero: 1, recompute: selective, sp: true", v);
  REQUIRE(pinned.plan);
  const Layout& l = pinned.plan->layout;
  CHECK(l.micro_batch == 2);
  CHECK(l.accumulation == 4);  // 16 sequences over d = 2 in micro-batches of 2
  CHECK(l.virtual_stages == 2);
  CHECK(l.zero == 1);
  CHECK(l.recompute == Recompute::selective);
  CHECK(l.sp);
  CHECK(pinned.plan->fits);
  // The search's best is never slower than a pinned choice.
  CHECK(free.predicted_step <= pinned.predicted_step);
  // A micro-batch above the search's default ceiling (16) is honoured when published.
  const ValidationResult big = s.evaluate(", mb: 8, sp: false", v);
  REQUIRE(big.plan);
  CHECK(big.plan->layout.micro_batch == 8);
  CHECK_FALSE(big.plan->layout.sp);
}

TEST_CASE("a pinned layout the memory model does not fit is costed and marked", "[plan][validation]") {
  // What the pinned layout needs, on a device it fits; then devices it misses by 1.2x
  // (costed and marked: the model's largest excess on a run that ran) and by 2x (not
  // costed: a run that cannot have happened as written, kNotRunMemoryFactor = 1.5).
  const std::string pins = ", mb: 1, recompute: full";
  double need_gib = 0;
  {
    const Source roomy("80");
    ValidationSet v;
    const ValidationResult r = roomy.evaluate(pins, v);
    REQUIRE(r.costed());
    need_gib = r.plan->memory.total() / double(1LL << 30);
  }
  ValidationSet v;
  const Source tight(std::to_string(need_gib / 1.2));
  const ValidationResult unpinned = tight.evaluate("", v);
  CHECK_FALSE(unpinned.costed());  // unpinned: no fitting knob set, and the reason says so
  CHECK(unpinned.why.rfind("does not fit: the least memory a knob set needs is", 0) == 0);
  const ValidationResult pinned = tight.evaluate(pins, v);
  REQUIRE(pinned.costed());
  CHECK_FALSE(pinned.plan->fits);
  CHECK(pinned.plan->layout.micro_batch == 1);
  CHECK(pinned.predicted_step > 0);
  const Source small(std::to_string(need_gib / 2));
  const ValidationResult far = small.evaluate(pins, v);
  CHECK_FALSE(far.costed());
  CHECK(far.predicted_step == 0);
  CHECK(far.why.rfind("does not fit: needs ", 0) == 0);
  CHECK_FALSE(far.broken_rule);
}

TEST_CASE("bad pins are one line naming the run and the key", "[plan][validation]") {
  const Source s("80");
  const std::string at = (s.dir / "validation" / "src.yaml").string() + ": runs[0]: ";
  CHECK(s.error_of(", v: 2", "t: 2, p: 1") == at + "v: 2 needs p > 1");
  CHECK(s.error_of(", recompute: most") == at + "recompute: 'most' is not valid (valid: none, selective, full)");
  CHECK(s.error_of(", sp: true", "t: 1, p: 2") == at + "sp: true needs t > 1");
  CHECK_THAT(s.error_of(", vp: 2"), Catch::StartsWith(at + "vp: unknown section or field of a validation run"));
  CHECK_THAT(s.error_of(", zero: 4"), Catch::StartsWith(at + "zero: 4 is out of range"));
  // 16 sequences over d = 2: 8 a rank, which 3 does not divide.
  CHECK(s.error_of(", mb: 3") == at + "mb: 3 does not divide the sequences per data-parallel rank (batch 16 over d*e = 2)");
}
