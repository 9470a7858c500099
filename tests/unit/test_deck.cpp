// SPDX-License-Identifier: BSD-3-Clause
// Input decks: the shipped decks load; every class of bad input gets its own message
// naming the file, line, field and what is allowed (the text is checked).
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "mini5d/comm/device_mpi.hpp"
#include "mini5d/core/deck.hpp"
#include "mini5d/core/deck_resume.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/train/trainer.hpp"

using namespace mini5d;
using Catch::Matchers::Contains;

namespace {
const std::string kDir = std::string(MINI5D_SOURCE_DIR) + "/inputs/";

std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    parse_deck(text, "t.yaml", overrides);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("shipped decks load with the documented sizes", "[deck]") {
  const Deck tiny = load_deck(kDir + "tiny.yaml");
  CHECK(tiny.model.vocab == 16);
  const Deck small = load_deck(kDir + "small.yaml");
  CHECK(small.model.vocab == 4096);
  CHECK(small.model.d_model == 512);
  CHECK(small.model.layers == 8);
  CHECK(small.model.heads == 8);
  CHECK(small.model.seq == 256);
  CHECK(small.train.micro_batch == 8);
  const Deck gpt2 = load_deck(kDir + "gpt2-124m.yaml");
  CHECK(gpt2.model.vocab == 50257);
  CHECK(gpt2.model.d_model == 768);
  CHECK(gpt2.model.layers == 12);
  CHECK(gpt2.model.heads == 12);
  CHECK(gpt2.model.seq == 1024);
  // GPT-2's block parts by default; llama-tiny is tiny with Llama's.
  CHECK((tiny.model.norm == Norm::layernorm && tiny.model.mlp == Mlp::gelu && tiny.model.bias));
  const Deck llama = load_deck(kDir + "llama-tiny.yaml");
  CHECK((llama.model.norm == Norm::rmsnorm && llama.model.mlp == Mlp::swiglu && !llama.model.bias));
  CHECK(llama.model.d_model == tiny.model.d_model);
  CHECK(unsupported_features(llama).empty());
}

TEST_CASE("the block's parts: a value outside the choices is one line naming the field", "[deck]") {
  CHECK(error_of("", {"model.norm=batchnorm"}) ==
        "command line: model.norm: expected one of layernorm, rmsnorm, got \"batchnorm\"");
  CHECK(error_of("model:\n  mlp: relu\n") == "t.yaml:2: model.mlp: expected one of gelu, swiglu, got \"relu\"");
  CHECK(error_of("", {"model.bias=no"}) == "command line: model.bias: expected one of true, false, got \"no\"");
}

TEST_CASE("positions: learned by default, rope in llama-tiny; bad values are one line naming the field",
          "[deck][rope]") {
  const Deck tiny = load_deck(kDir + "tiny.yaml");
  CHECK((tiny.model.positions == Positions::learned && tiny.model.rope_theta == 10000));
  const Deck llama = load_deck(kDir + "llama-tiny.yaml");
  CHECK((llama.model.positions == Positions::rope && llama.model.rope_theta == 10000));
  // The deck round-trips through to_yaml with its base.
  const Deck big = parse_deck("model:\n  positions: rope\n  rope_theta: 500000.5\n", "t.yaml");
  CHECK(parse_deck(big.to_yaml(), "again.yaml").model.rope_theta == 500000.5);
  CHECK(error_of("", {"model.positions=alibi"}) ==
        "command line: model.positions: expected one of learned, rope, got \"alibi\"");
  CHECK(error_of("model:\n  rope_theta: 0\n") ==
        "t.yaml:2: model.rope_theta: expected a number in [1e-06, 1e+12], got \"0\"");
  // d_model 36 over 4 heads: heads of 9 columns, which rope cannot pair; learned can.
  CHECK(error_of("model:\n  d_model: 36\n  positions: rope\n") ==
        "t.yaml: model.positions: rope turns pairs of a head's columns: model.d_model / model.heads must be even, "
        "got 9");
  CHECK(error_of("model:\n  d_model: 36\n") == "(no error)");
}

TEST_CASE("the long-context deck: over its activation budget at c = 1 with full attention, within it blockwise "
          "and at c = 2 and 4", "[deck][cp]") {
  const Deck lc = load_deck(kDir + "long-context.yaml");
  CHECK(lc.model.seq == 8192);
  CHECK(lc.parallel.c == 4);
  CHECK(lc.train.activation_budget_mib == 256);
  CHECK(unsupported_features(lc).empty());
  CHECK(train::activation_budget_problem(lc).empty());
  CHECK(train::activation_budget_problem(load_deck(kDir + "long-context.yaml", {"parallel.c=2"})).empty());
  CHECK_THAT(train::activation_budget_problem(load_deck(kDir + "long-context.yaml", {"parallel.c=1", "model.attention=full"})),
             Contains("train.activation_budget_mib=256: the predicted activation memory per rank is 1664.3 MiB"));
  CHECK_THAT(train::activation_budget_problem(load_deck(kDir + "long-context.yaml", {"parallel.c=1", "model.attention=full"})),
             Contains("set model.attention=blockwise"));
  // Blockwise at c = 1 (the default) keeps no seq x seq term: 92.4 MiB kept + 36.6 MiB
  // of work buffers, within the budget. (The work buffers hold two [B*H, 64, 512] panels:
  // 2 * 2 * 64 * (512 - 64) * 4 = 458752 bytes more than the 64 x 64 tiles they replaced.)
  const Deck one = load_deck(kDir + "long-context.yaml", {"parallel.c=1"});
  CHECK(train::activation_budget_problem(one).empty());
  const auto b = train::predicted_activation_memory(one);
  CHECK(b.activations == 96927744);
  CHECK(b.workspace == 38371328);
  // The prediction at c = 4 is under a fifth of the budget.
  const auto p = train::predicted_activation_memory(lc);
  CHECK((p.activations + p.workspace) / (1024.0 * 1024.0) < 50);
}

TEST_CASE("inputs/default.yaml is the built-in default deck", "[deck]") {
  CHECK(load_deck(kDir + "default.yaml").to_yaml() == default_deck().to_yaml());
}

TEST_CASE("parallel.stage_layers reads a YAML list or the command line's 3,5 and writes them back", "[deck]") {
  const Deck listed = parse_deck("parallel:\n  p: 2\n  stage_layers: [3, 5]\n", "t.yaml");
  CHECK(listed.parallel.stage_layers.counts == std::vector<long long>{3, 5});
  CHECK_THAT(listed.to_yaml(), Contains("  stage_layers: [3,5]\n"));
  CHECK_THAT(listed.to_json(), Contains("\"stage_layers\": [3,5]"));
  CHECK(parse_deck(listed.to_yaml(), "round trip").parallel.stage_layers.counts == listed.parallel.stage_layers.counts);
  const Deck cli = parse_deck("parallel:\n  p: 2\n", "t.yaml", {"parallel.stage_layers=3,5"});
  CHECK(cli.parallel.stage_layers.counts == std::vector<long long>{3, 5});
  const Deck balanced = parse_deck("parallel:\n  stage_layers: balanced\n", "t.yaml");
  CHECK(balanced.parallel.stage_layers.balanced);
  CHECK_THAT(balanced.to_json(), Contains("\"stage_layers\": \"balanced\""));
  CHECK_THAT(default_deck().to_yaml(), Contains("  stage_layers: auto\n"));
}

TEST_CASE("a deck survives to_yaml and back", "[deck]") {
  const Deck d = load_deck(kDir + "small.yaml", {"train.lr=0.00123", "data.path=x y"});
  CHECK(parse_deck(d.to_yaml(), "round trip").to_yaml() == d.to_yaml());
}

TEST_CASE("overrides replace deck values", "[deck]") {
  const Deck d = parse_deck("model:\n  layers: 3\n", "t.yaml", {"model.layers=5", "train.lr=0.5"});
  CHECK(d.model.layers == 5);
  CHECK(d.train.lr == 0.5);
}

TEST_CASE("bad decks: one message per problem, with file, line, field and range", "[deck]") {
  CHECK_THAT(error_of("modle:\n  vocab: 3\n"),
             Contains("t.yaml:1: modle: unknown section (valid: model, parallel, train, data, checkpoint, output)"));
  CHECK_THAT(error_of("model:\n  vocab: 64\n  d_modle: 3\n"),
             Contains("t.yaml:3: model.d_modle: unknown field (valid in model: vocab, vocab_pad_to, d_model, layers, heads, kv_heads, seq, ffn, experts, top_k, moe_every, capacity_factor, tie_embeddings, attention, norm, mlp, bias, positions, rope_theta)"));
  CHECK_THAT(error_of("model:\n  layers: abc\n"),
             Contains("t.yaml:2: model.layers: expected an integer in [1, 1024], got \"abc\""));
  CHECK_THAT(error_of("model:\n  layers: 2.5\n"),
             Contains("t.yaml:2: model.layers: expected an integer in [1, 1024], got \"2.5\""));
  CHECK_THAT(error_of("train:\n  beta1: 1.5\n"),
             Contains("t.yaml:2: train.beta1: expected a number in [0, 0.999999], got \"1.5\""));
  CHECK_THAT(error_of("data:\n  source: parquet\n"),
             Contains("t.yaml:2: data.source: expected one of markov, text, tokens, got \"parquet\""));
  CHECK_THAT(error_of("model:\n  heads: [1, 2]\n"),
             Contains("t.yaml:2: model.heads: expected an integer in [1, 1024], got a list"));
  CHECK_THAT(error_of("parallel:\n  stage_layers: [2, x]\n"),
             Contains("t.yaml:2: parallel.stage_layers: expected auto, balanced or a list of positive integers such as "
                      "[3, 5], got \"2,x\" (\"x\" is not a positive integer)"));
  CHECK_THAT(error_of("parallel:\n  stage_layers: [2, [3]]\n"),
             Contains("t.yaml:2: parallel.stage_layers: expected auto, balanced or a list of positive integers such as "
                      "[3, 5], got a list"));
  CHECK_THAT(error_of("model: 3\n"), Contains("t.yaml:1: model: expected a map of fields"));
  CHECK_THAT(error_of("model:\n  vocab: [\n"), Contains("t.yaml:") && Contains("not valid YAML"));
  CHECK_THAT(error_of("model:\n  d_model: 64\n  heads: 5\n"),
             Contains("t.yaml: model.heads: must divide model.d_model=64, got 5"));
  CHECK_THAT(error_of("data:\n  source: text\n"), Contains("t.yaml: data.path: required when data.source=text"));
}

TEST_CASE("valid decks this build cannot run yet are named, field by field", "[deck]") {
  const Deck d = parse_deck("parallel:\n  p: 2\n  c: 2\n  t: 2\ntrain:\n  recompute: full\n", "t.yaml");
  const auto u = unsupported_features(d);  // tensor, pipeline and context parallelism and recomputation run
  CHECK(u.empty());
  // Every axis runs, MoE with a context ring and with full recomputation too.
  CHECK(unsupported_features(parse_deck("parallel:\n  e: 2\nmodel:\n  experts: 4\n", "t.yaml")).empty());
  CHECK(unsupported_features(parse_deck("parallel:\n  c: 2\n  e: 2\nmodel:\n  experts: 4\n", "t.yaml")).empty());
  CHECK(unsupported_features(parse_deck("model:\n  experts: 4\ntrain:\n  recompute: full\n", "t.yaml")).empty());
  // Tied embeddings run with ZeRO 0 and 1, not beyond.
  CHECK(unsupported_features(parse_deck("model:\n  tie_embeddings: true\n", "t.yaml")).empty());
  CHECK(unsupported_features(parse_deck("model:\n  tie_embeddings: true\nparallel:\n  d: 2\n  zero: 1\n", "t.yaml")).empty());
  CHECK(unsupported_features(parse_deck("model:\n  tie_embeddings: true\nparallel:\n  d: 2\n  zero: 3\n", "t.yaml")) ==
        std::vector<std::string>{"t.yaml: model.tie_embeddings=true with parallel.zero=3: not implemented in this build "
                                 "(supported: parallel.zero 0 or 1 with tied embeddings)"});
  // ZeRO 3 runs with a pipeline too.
  CHECK(unsupported_features(parse_deck("parallel:\n  p: 2\n  zero: 3\n", "t.yaml")).empty());
  CHECK(unsupported_features(load_deck(kDir + "tiny.yaml")).empty());
}

TEST_CASE("every problem is reported, not just the first", "[deck]") {
  const std::string e = error_of("model:\n  vocab: 0\n  layers: -1\ntrain:\n  lr: x\n");
  CHECK_THAT(e, Contains("t.yaml:2: model.vocab"));
  CHECK_THAT(e, Contains("t.yaml:3: model.layers"));
  CHECK_THAT(e, Contains("t.yaml:5: train.lr"));
}

TEST_CASE("bad overrides name the command line", "[deck]") {
  CHECK_THAT(error_of("", {"model.layerz=3"}),
             Contains("command line: model.layerz: unknown field (valid in model:"));
  CHECK_THAT(error_of("", {"steps=3"}), Contains("command line: \"steps=3\": an override is section.field=value"));
  CHECK_THAT(error_of("", {"train.steps=-4"}),
             Contains("command line: train.steps: expected an integer in [0, 1000000000000], got \"-4\""));
}

TEST_CASE("rules across fields are checked beside other problems and blame where the value came from", "[deck]") {
  // The relation is reported with an unrelated field error...
  const std::string e = error_of("model:\n  heads: 5\n  layers: x\n");
  CHECK_THAT(e, Contains("t.yaml:3: model.layers: expected an integer"));
  CHECK_THAT(e, Contains("t.yaml: model.heads: must divide model.d_model=128, got 5"));
  // ...blamed on the command line when a field it names was overridden there...
  CHECK(error_of("", {"model.heads=5"}) == "command line: model.heads: must divide model.d_model=128, got 5");
  CHECK(error_of("model:\n  heads: 5\n", {"model.d_model=96"}) ==
        "command line: model.heads: must divide model.d_model=96, got 5");
  CHECK_THAT(error_of("train:\n  lr: 0.1\n", {"train.min_lr=1"}), Contains("command line: train.min_lr: must be at most"));
  // ...and not checked against a default when a field it names failed its own check.
  const std::string f = error_of("", {"model.heads=5", "model.d_model=x"});
  CHECK_THAT(f, Contains("command line: model.d_model: expected an integer"));
  CHECK_THAT(f, !Contains("must divide"));
}

TEST_CASE("sizes the kernels cannot index are refused", "[deck]") {
  // Token rows are 32-bit indices.
  CHECK_THAT(error_of("", {"model.seq=1048576", "train.micro_batch=4096"}),
             Contains("command line: train.micro_batch: train.micro_batch x model.seq must be at most 2^31-1 tokens "
                      "per micro-batch, got 4294967296"));
  CHECK(error_of("", {"model.seq=1048576", "train.micro_batch=2047"}) == "(no error)");
}

TEST_CASE("quoted input is truncated and its non-printable bytes escaped", "[deck]") {
  // A 10 MB value is not echoed in full, a binary byte not raw.
  const std::string big(10 * 1024 * 1024, 'x');
  const std::string e = error_of("model:\n  vocab: " + big + "\n");
  CHECK(e.size() < 200);
  CHECK_THAT(e, Contains("got \"" + std::string(64, 'x') + "... (10485760 bytes)\""));
  const std::string b = error_of(std::string("model:\n  vocab: a\xff\x01" "b\n"));
  CHECK_THAT(b, Contains("got \"a\\xff\\x01b\""));
  for (char c : b) CHECK((c == '\n' || (static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f)));
  const std::string o = error_of("", {std::string("model.\x1b[31mred=1")});
  CHECK_THAT(o, Contains("model.\\x1b[31mred: unknown field"));
}

TEST_CASE("a missing deck file names the file", "[deck]") {
  try {
    load_deck("/nonexistent/deck.yaml");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), Contains("/nonexistent/deck.yaml: cannot open the deck file"));
  }
}

TEST_CASE("parallel.gpu_aware_mpi: auto asks the library, true is refused when it says no", "[deck]") {
  using comm::MpiDeviceSupport;
  using comm::resolve_gpu_aware;
  CHECK(parse_deck("", "test", {}).parallel.gpu_aware_mpi == Toggle::automatic);
  for (auto s : {MpiDeviceSupport::yes, MpiDeviceSupport::no, MpiDeviceSupport::unknown}) {
    // Host memory: MPI gets host pointers whatever the setting; nothing is refused.
    for (const Toggle setting : {Toggle::automatic, Toggle::on, Toggle::off}) CHECK_FALSE(resolve_gpu_aware(setting, false, s));
    CHECK_FALSE(resolve_gpu_aware(Toggle::off, true, s));
  }
  CHECK(resolve_gpu_aware(Toggle::automatic, true, MpiDeviceSupport::yes));
  CHECK_FALSE(resolve_gpu_aware(Toggle::automatic, true, MpiDeviceSupport::no));
  CHECK_FALSE(resolve_gpu_aware(Toggle::automatic, true, MpiDeviceSupport::unknown));  // falls back to staging
  CHECK(resolve_gpu_aware(Toggle::on, true, MpiDeviceSupport::yes));
  CHECK(resolve_gpu_aware(Toggle::on, true, MpiDeviceSupport::unknown));  // the user knows their MPI
  CHECK_THROWS_WITH(resolve_gpu_aware(Toggle::on, true, MpiDeviceSupport::no),
                    Catch::Contains("parallel.gpu_aware_mpi=true: this MPI library reports no CUDA support"));
  CHECK_THROWS_AS(parse_deck("", "test", {"parallel.gpu_aware_mpi=maybe"}), InputError);
  // This build (host memory here): the start-up header's line says so.
  if (!comm::device_build()) CHECK(comm::describe_mpi_memory(Toggle::automatic).rfind("host memory", 0) == 0);
}

TEST_CASE("deck edge cases: nothing set, a second document, an override twice, a flood of problems", "[deck]") {
  // A deck file that sets no field is refused (the built-in default needs no file).
  const std::string path = "test_deck_edge.yaml";
  auto load_error = [&](const std::string& text) {
    std::ofstream(path) << text;
    try {
      load_deck(path, {});
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK_THAT(load_error("{}\n"), Contains("test_deck_edge.yaml: the deck sets no field"));
  CHECK_THAT(load_error("model:\n"), Contains("test_deck_edge.yaml: the deck sets no field"));
  CHECK(load_error("model:\n  layers: 3\n") == "(no error)");
  // A second document would be ignored: refused, naming its marker's line.
  CHECK_THAT(error_of("model:\n  layers: 2\n---\nmodel:\n  layers: 4\n"),
             Contains("t.yaml:3: a second YAML document; a deck is one document"));
  // The same field twice on the command line: the last one wins (wrapper scripts pass
  // defaults that the user's own overrides after them replace).
  CHECK(parse_deck("", "t.yaml", {"model.vocab=16", "model.vocab=32"}).model.vocab == 32);
  // 1000 unknown keys: the first 20 lines and a count, not 1000 lines.
  std::string flood = "model:\n";
  for (int i = 0; i < 1000; ++i) flood += "  bad" + std::to_string(i) + ": 1\n";
  const std::string e = error_of(flood);
  CHECK(std::count(e.begin(), e.end(), '\n') == int(InputError::kShownProblems));
  CHECK_THAT(e, Contains("... and 980 more problems"));
  std::remove(path.c_str());
}

TEST_CASE("resume: every field has a class; model and data must match, lr may change", "[deck]") {
  const auto listed = resume_classified_fields();
  for (const auto& [section, fields] : deck_sections())
    for (const auto& f : fields) {
      INFO(section + "." + f);
      CHECK(std::count(listed.begin(), listed.end(), section + "." + f) == 1);
    }
  const Deck stored = load_deck(kDir + "tiny.yaml");
  const Deck now = load_deck(kDir + "tiny.yaml", {"model.heads=2", "data.markov_branching=4", "train.lr=0.005",
                                                  "parallel.d=2", "output.report=", "train.precision=bf16"});
  const ResumeDiff d = compare_for_resume(stored, now);
  REQUIRE(d.refused.size() == 2);
  CHECK(d.refused[0] == "model.heads is 4 in the checkpoint, 2 in the deck");
  CHECK(d.refused[1] == "data.markov_branching is 3 in the checkpoint, 4 in the deck");
  // The state is fp32 in either precision (a bf16 run keeps fp32 master weights).
  REQUIRE(d.changed.size() == 3);
  CHECK(d.changed[0] == "resume: parallel.d changed 1 -> 2 (layout)");
  CHECK(d.changed[1] == "resume: train.lr changed 0.01 -> 0.005");
  CHECK(d.changed[2] == "resume: train.precision changed fp32 -> bf16");
  CHECK(compare_for_resume(stored, stored).refused.empty());
  // The attention core is how the model is computed, not which model: like a layout.
  const ResumeDiff att = compare_for_resume(stored, load_deck(kDir + "tiny.yaml", {"model.attention=full"}));
  CHECK(att.refused.empty());
  REQUIRE(att.changed.size() == 1);
  CHECK(att.changed[0] == "resume: model.attention changed blockwise -> full (layout)");
}
