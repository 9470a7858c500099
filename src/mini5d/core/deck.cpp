// SPDX-License-Identifier: BSD-3-Clause
// Deck schema and parser. The schema table below is the single source of truth for
// the fields: parsing, range checks, overrides, to_yaml/to_json and `deck-help` are
// all generated from it, so a new field is one line here.
#include "mini5d/core/deck.hpp"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "mini5d/core/error.hpp"
#include "mini5d/core/json_text.hpp"

namespace mini5d {
namespace {

enum class Kind { Int, Real, Text, Choice };

struct Field {
  std::string section, name;
  Kind kind;
  double lo, hi;                     // Int / Real range (inclusive)
  std::vector<std::string> choices;  // Choice
  std::string doc;
  std::function<void(Deck&, const std::string&)> set;  // value already validated
  std::function<std::string(const Deck&)> get;
  std::string key() const { return section + "." + name; }
};

// A YAML double-quoted scalar that reads back as exactly `v`: quotes, backslashes and
// control characters escaped (a raw TAB or newline would be folded or rejected).
std::string yaml_quote(const std::string& v) {
  std::string q = "\"";
  for (char ch : v) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      q += '\\';
      q += ch;
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(c));
      q += buf;
    } else {
      q += ch;
    }
  }
  return q + "\"";
}

// Shortest decimal that reads back as the same double: exact round trips in to_yaml,
// and "0.999999" rather than "0.99999899999999997" in messages.
std::string fmt_real(double v) {
  for (int prec = 6; prec <= 17; ++prec) {
    std::ostringstream os;
    os.precision(prec);
    os << v;
    if (std::strtod(os.str().c_str(), nullptr) == v || prec == 17) return os.str();
  }
  return "";
}

std::string range_text(const Field& f) {
  switch (f.kind) {
    case Kind::Int:
      return "an integer in [" + std::to_string(static_cast<long long>(f.lo)) + ", " +
             std::to_string(static_cast<long long>(f.hi)) + "]";
    case Kind::Real: return "a number in [" + fmt_real(f.lo) + ", " + fmt_real(f.hi) + "]";
    case Kind::Text: return "a string";
    case Kind::Choice: {
      std::string s = "one of ";
      for (size_t i = 0; i < f.choices.size(); ++i) s += (i ? ", " : "") + f.choices[i];
      return s;
    }
  }
  return "";
}

template <class Sec, class T>
Field int_field(const char* sec, const char* name, Sec Deck::*s, T Sec::*m, double lo,
                double hi, const char* doc) {
  return Field{sec, name, Kind::Int, lo, hi, {}, doc,
               [s, m](Deck& d, const std::string& v) {
                 (d.*s).*m = static_cast<T>(std::stoll(v));
               },
               [s, m](const Deck& d) { return std::to_string((d.*s).*m); }};
}
template <class Sec>
Field real_field(const char* sec, const char* name, Sec Deck::*s, double Sec::*m,
                 double lo, double hi, const char* doc) {
  return Field{sec, name, Kind::Real, lo, hi, {}, doc,
               [s, m](Deck& d, const std::string& v) { (d.*s).*m = std::strtod(v.c_str(), nullptr); },
               [s, m](const Deck& d) { return fmt_real((d.*s).*m); }};
}
template <class Sec>
Field text_field(const char* sec, const char* name, Sec Deck::*s, std::string Sec::*m,
                 std::vector<std::string> choices, const char* doc) {
  return Field{sec, name, choices.empty() ? Kind::Text : Kind::Choice, 0, 0, choices, doc,
               [s, m](Deck& d, const std::string& v) { (d.*s).*m = v; },
               [s, m](const Deck& d) { return (d.*s).*m; }};
}

const std::vector<Field>& schema() {
  static const std::vector<Field> fields = {
      int_field("model", "vocab", &Deck::model, &ModelConfig::vocab, 2, 1 << 24, "tokens in the vocabulary"),
      int_field("model", "d_model", &Deck::model, &ModelConfig::d_model, 1, 65536, "residual width"),
      int_field("model", "layers", &Deck::model, &ModelConfig::layers, 1, 1024, "transformer blocks"),
      int_field("model", "heads", &Deck::model, &ModelConfig::heads, 1, 1024, "attention heads; must divide d_model"),
      int_field("model", "seq", &Deck::model, &ModelConfig::seq, 1, 1 << 20, "tokens per sequence (context length)"),
      int_field("model", "ffn", &Deck::model, &ModelConfig::ffn, 1, 1 << 20, "MLP hidden width (GPT-2 uses 4*d_model)"),
      int_field("model", "experts", &Deck::model, &ModelConfig::experts, 0, 1 << 16, "experts per MoE layer; 0 for a dense MLP"),
      int_field("model", "top_k", &Deck::model, &ModelConfig::top_k, 1, 1 << 16, "experts each token is routed to"),
      int_field("model", "moe_every", &Deck::model, &ModelConfig::moe_every, 1, 1024, "with experts > 0, every N-th block (blocks N-1, 2N-1, ...) has a mixture-of-experts MLP; 1: every block"),
      real_field("model", "capacity_factor", &Deck::model, &ModelConfig::capacity_factor, 0, 1e6, "0: dropless routing (layout-invariant); > 0: each rank sends an expert at most ceil(factor * tokens * top_k / experts) tokens per micro-batch and drops (counts) the rest"),
      text_field("model", "tie_embeddings", &Deck::model, &ModelConfig::tie_embeddings, {"false", "true"}, "share the token embedding with the LM head"),
      int_field("parallel", "d", &Deck::parallel, &ParallelConfig::d, 1, 1 << 20, "data-parallel degree"),
      int_field("parallel", "t", &Deck::parallel, &ParallelConfig::t, 1, 1 << 20, "tensor-parallel degree"),
      int_field("parallel", "p", &Deck::parallel, &ParallelConfig::p, 1, 1 << 20, "pipeline-parallel degree"),
      int_field("parallel", "c", &Deck::parallel, &ParallelConfig::c, 1, 1 << 20, "context-parallel degree"),
      int_field("parallel", "e", &Deck::parallel, &ParallelConfig::e, 1, 1 << 20, "expert-parallel degree"),
      int_field("parallel", "zero", &Deck::parallel, &ParallelConfig::zero, 0, 3, "ZeRO stage"),
      int_field("parallel", "virtual_stages", &Deck::parallel, &ParallelConfig::virtual_stages, 1, 1024, "interleaved pipeline chunks per stage"),
      text_field("parallel", "schedule", &Deck::parallel, &ParallelConfig::schedule, {"1f1b", "gpipe", "interleaved"}, "pipeline schedule when p > 1: gpipe (all forwards, then all backwards), 1f1b (one forward, one backward after a warm-up), interleaved (1F1B over virtual_stages > 1 chunks per rank; needs train.accumulation divisible by p); micro-batches = train.accumulation"),
      int_field("parallel", "ranks_per_node", &Deck::parallel, &ParallelConfig::ranks_per_node, 0, 1 << 20, "ranks per node; 0 detects nodes, > 0 makes virtual nodes for testing"),
      text_field("parallel", "gpu_aware_mpi", &Deck::parallel, &ParallelConfig::gpu_aware_mpi, {"auto", "false", "true"}, "give MPI device pointers (GPU-aware MPI): auto asks the MPI library (MPIX_Query_cuda_support), false stages through pinned host buffers, true is refused if the library reports no support"),
      text_field("parallel", "sp", &Deck::parallel, &ParallelConfig::sp, {"true", "false"}, "sequence parallelism when t > 1: LayerNorms, residuals and the embedding output hold seq/t tokens per rank (all-gather / reduce-scatter instead of all-reduce)"),
      real_field("parallel", "bucket_mb", &Deck::parallel, &ParallelConfig::bucket_mb, 0.001, 1 << 20, "largest gradient all-reduce under ZeRO 0-1, in MiB: a unit larger than this (e.g. a big embedding) is reduced in several buckets"),
      real_field("parallel", "collective_timeout_s", &Deck::parallel, &ParallelConfig::collective_timeout_s, 0, 1e9, "seconds a rank may wait in one blocking collective (or a checkpoint save) before it prints its rank, step, axis and operation and ends the job, instead of hanging until the batch limit; 0 disables"),
      text_field("parallel", "force_placement", &Deck::parallel, &ParallelConfig::force_placement, {"false", "true"}, "run even if tensor-parallel groups cross nodes"),
      int_field("train", "steps", &Deck::train, &TrainConfig::steps, 0, 1e12, "optimizer steps"),
      int_field("train", "micro_batch", &Deck::train, &TrainConfig::micro_batch, 1, 1 << 20, "sequences per micro-batch per rank"),
      int_field("train", "accumulation", &Deck::train, &TrainConfig::accumulation, 1, 1 << 20, "micro-batches accumulated per step"),
      int_field("train", "seed", &Deck::train, &TrainConfig::seed, 0, 9007199254740992.0, "seed of the parameter initialisation"),
      real_field("train", "lr", &Deck::train, &TrainConfig::lr, 0, 10, "peak learning rate"),
      real_field("train", "min_lr", &Deck::train, &TrainConfig::min_lr, 0, 10, "learning rate at the end of the cosine decay"),
      int_field("train", "warmup", &Deck::train, &TrainConfig::warmup, 0, 1e12, "steps of linear warm-up"),
      real_field("train", "weight_decay", &Deck::train, &TrainConfig::weight_decay, 0, 10, "AdamW decoupled weight decay (matrices and embeddings only)"),
      real_field("train", "beta1", &Deck::train, &TrainConfig::beta1, 0, 0.999999, "AdamW first-moment decay"),
      real_field("train", "beta2", &Deck::train, &TrainConfig::beta2, 0, 0.999999, "AdamW second-moment decay"),
      real_field("train", "eps", &Deck::train, &TrainConfig::eps, 1e-30, 1, "AdamW epsilon"),
      real_field("train", "grad_clip", &Deck::train, &TrainConfig::grad_clip, 0, 1e30, "global-norm clipping threshold; 0 disables"),
      real_field("train", "aux_loss_coef", &Deck::train, &TrainConfig::aux_loss_coef, 0, 1e6, "weight of the mixture-of-experts load-balancing (Switch/GShard) loss, added to the training loss and reported separately"),
      int_field("train", "max_skipped", &Deck::train, &TrainConfig::max_skipped, 0, 1e12, "consecutive steps with a non-finite loss or gradient norm that are skipped (parameters and moments untouched) before the run stops; 0 stops at the first"),
      real_field("train", "spike_factor", &Deck::train, &TrainConfig::spike_factor, 0, 1e30, "stop the run when a step's loss exceeds this many times the mean of the previous (up to 20) steps' losses; 0 disables"),
      text_field("train", "allow_oversubscribe_memory", &Deck::train, &TrainConfig::allow_oversubscribe_memory, {"false", "true"}, "start even when the predicted memory per rank (training state, activations, workspace) exceeds the free memory of its node or device; by default such a run is refused before anything is allocated"),
      text_field("train", "recompute", &Deck::train, &TrainConfig::recompute, {"none", "selective", "full"}, "activation recomputation in the backward"),
      real_field("train", "activation_budget_mib", &Deck::train, &TrainConfig::activation_budget_mib, 0, 1e12, "per-rank budget, in MiB, for the activations one micro-batch keeps plus the backward's work buffers, as the planner's formulas predict them (the start-up header prints the prediction): a run predicted over it is refused before anything is allocated; 0: no budget"),
      text_field("train", "precision", &Deck::train, &TrainConfig::precision, {"fp32", "bf16", "fp64"}, "arithmetic and training-state precision; this build trains in fp32, and accepts bf16 (mixed, fp32 master weights) and fp64 in decks so that mini5d-plan's decks carry the precision they were planned for"),
      text_field("data", "source", &Deck::data, &DataConfig::source, {"markov", "text", "tokens"}, "markov: synthetic chain with a known entropy floor; text: bytes of a file (vocab 256); tokens: a mini5d token file"),
      text_field("data", "path", &Deck::data, &DataConfig::path, {}, "data file for source text or tokens (relative to the working directory)"),
      int_field("data", "seed", &Deck::data, &DataConfig::seed, 0, 9007199254740992.0, "seed of the Markov table and of the sequence sampler"),
      int_field("data", "markov_order", &Deck::data, &DataConfig::markov_order, 1, 8, "Markov chain order (tokens of context)"),
      int_field("data", "markov_branching", &Deck::data, &DataConfig::markov_branching, 1, 1 << 20, "successors per context (sparsity); at most vocab"),
      text_field("checkpoint", "dir", &Deck::checkpoint, &CheckpointConfig::dir, {}, "directory of the checkpoints and their latest pointer"),
      int_field("checkpoint", "every", &Deck::checkpoint, &CheckpointConfig::every, 0, 1e12, "steps between checkpoints; 0: none (signals and at_end still save)"),
      text_field("checkpoint", "at_end", &Deck::checkpoint, &CheckpointConfig::at_end, {"false", "true"}, "save a checkpoint after the last step"),
      int_field("checkpoint", "keep", &Deck::checkpoint, &CheckpointConfig::keep, 0, 1 << 20, "newest checkpoints kept; 0 keeps all"),
      text_field("checkpoint", "resume", &Deck::checkpoint, &CheckpointConfig::resume, {}, "resume from \"latest\" in checkpoint.dir or a checkpoint file; empty starts fresh"),
      text_field("checkpoint", "overwrite", &Deck::checkpoint, &CheckpointConfig::overwrite, {"false", "true"}, "let a fresh run (no resume) write into a checkpoint.dir that holds another run's checkpoints: same-step files are replaced and latest moves to this run; the other run's other files are never deleted"),
      int_field("output", "log_every", &Deck::output, &OutputConfig::log_every, 1, 1 << 30, "steps between progress lines"),
      text_field("output", "report", &Deck::output, &OutputConfig::report, {}, "JSON report path; empty disables"),
      text_field("output", "trace", &Deck::output, &OutputConfig::trace, {}, "Chrome trace-event JSON of every rank's pipeline schedule (the first steps), for Perfetto or chrome://tracing; empty disables"),
  };
  return fields;
}

const Field* find_field(const std::string& section, const std::string& name) {
  for (const auto& f : schema())
    if (f.section == section && f.name == name) return &f;
  return nullptr;
}

bool is_section(const std::string& s) {
  for (const auto& f : schema())
    if (f.section == s) return true;
  return false;
}

std::string fields_of(const std::string& section) {
  std::string s;
  for (const auto& f : schema())
    if (f.section == section) s += (s.empty() ? "" : ", ") + f.name;
  return s;
}

std::string sections_text() {
  std::string s;
  std::set<std::string> seen;
  for (const auto& f : schema())
    if (seen.insert(f.section).second) s += (s.empty() ? "" : ", ") + f.section;
  return s;
}

// User text as a message may quote it: non-printable bytes (control characters, bytes
// of a binary file, invalid UTF-8 is not decoded) as \xNN, and at most 64 bytes of it,
// so that a 10 MB value or a binary "deck" still gives one readable line.
std::string printable(const std::string& v) {
  constexpr std::size_t kMax = 64;
  std::string out;
  for (std::size_t i = 0; i < v.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(v[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  if (v.size() > kMax) out += "... (" + std::to_string(v.size()) + " bytes)";
  return out;
}

// Checks one scalar against its field; returns "" when valid, else what is wrong.
std::string check_value(const Field& f, const std::string& v) {
  const std::string want = "expected " + range_text(f) + ", got \"" + printable(v) + "\"";
  if (f.kind == Kind::Text) return "";
  if (f.kind == Kind::Choice) {
    for (const auto& c : f.choices)
      if (c == v) return "";
    return want;
  }
  if (v.empty()) return want;
  char* end = nullptr;
  errno = 0;
  if (f.kind == Kind::Int) {
    const long long x = std::strtoll(v.c_str(), &end, 10);
    if (*end != '\0' || errno == ERANGE) return want;
    if (x < f.lo || x > f.hi) return want;
    return "";
  }
  const double x = std::strtod(v.c_str(), &end);
  if (*end != '\0' || errno == ERANGE || !std::isfinite(x)) return want;
  if (x < f.lo || x > f.hi) return want;
  return "";
}

// Rules that tie fields together; the layout rules of the parallel axes arrive with
// their axes.
// Where each field's value came from, for the rules that tie fields together: a rule is
// not checked when a field it names failed its own check (it would judge a default the
// user never chose), and it is blamed on the command line when a field it names was
// overridden there.
struct Provenance {
  std::set<std::string> failed, overridden;
  // The fields a problem is about: `field` and every "section.field" its text names.
  std::vector<std::string> named(const std::string& field, const std::string& what) const;
};

void check_relations(const Deck& d, const std::string& origin, const Provenance& from, std::vector<std::string>& out) {
  auto bad = [&](const std::string& field, const std::string& what) {
    bool overridden = false;
    for (const auto& k : from.named(field, what)) {
      if (from.failed.count(k)) return;
      overridden = overridden || from.overridden.count(k) > 0;
    }
    out.push_back((overridden ? std::string("command line") : origin) + ": " + field + ": " + what);
  };
  if (d.model.d_model % d.model.heads != 0)
    bad("model.heads", "must divide model.d_model=" + std::to_string(d.model.d_model) +
                           ", got " + std::to_string(d.model.heads));
  // The kernels index a micro-batch's token rows with 32-bit integers (every larger
  // size, such as heads x seq^2 of the attention scores, is 64-bit).
  if (std::int64_t(d.train.micro_batch) * d.model.seq > std::numeric_limits<int>::max())
    bad("train.micro_batch", "train.micro_batch x model.seq must be at most 2^31-1 tokens per micro-batch, got " +
                                 std::to_string(std::int64_t(d.train.micro_batch) * d.model.seq));
  if (d.train.min_lr > d.train.lr)
    bad("train.min_lr", "must be at most train.lr=" + fmt_real(d.train.lr) + ", got " +
                            fmt_real(d.train.min_lr));
  if (d.data.source != "markov" && d.data.path.empty())
    bad("data.path", "required when data.source=" + d.data.source);
  if (d.data.source == "text" && d.model.vocab != 256)
    bad("model.vocab", "must be 256 for data.source=text (bytes), got " +
                           std::to_string(d.model.vocab));
  if (d.data.source == "markov") {
    if (d.data.markov_branching > d.model.vocab)
      bad("data.markov_branching", "expected an integer in [1, model.vocab=" +
                                       std::to_string(d.model.vocab) + "], got " +
                                       std::to_string(d.data.markov_branching));
    const double contexts = std::pow(double(d.model.vocab), d.data.markov_order);
    if (contexts > double(1 << 24))
      bad("data.markov_order", "model.vocab^markov_order must be at most 2^24 contexts, got " +
                                   fmt_real(contexts));
  }
  if (d.model.experts > 0 && d.model.moe_every > d.model.layers)
    bad("model.moe_every", "expected an integer in [1, model.layers=" + std::to_string(d.model.layers) +
                               "] (no block would have experts), got " + std::to_string(d.model.moe_every));
  if (d.model.experts > 0 && d.model.top_k > d.model.experts)
    bad("model.top_k", "expected an integer in [1, model.experts=" + std::to_string(d.model.experts) +
                           "], got " + std::to_string(d.model.top_k));
}

std::vector<std::string> Provenance::named(const std::string& field, const std::string& what) const {
  std::vector<std::string> keys{field};
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; };
  for (const auto& f : schema()) {
    const std::string k = f.key();
    // Whole names only: parallel.c is not named by parallel.collective_timeout_s.
    for (auto at = what.find(k); at != std::string::npos; at = what.find(k, at + 1))
      if ((at == 0 || !word(what[at - 1])) && (at + k.size() == what.size() || !word(what[at + k.size()]))) {
        keys.push_back(k);
        break;
      }
  }
  return keys;
}

void apply(Deck& deck, const Field& f, const std::string& v, const std::string& where,
           std::vector<std::string>& problems, Provenance& from) {
  const std::string err = check_value(f, v);
  if (where == "command line") from.overridden.insert(f.key());
  if (!err.empty()) {
    problems.push_back(where + ": " + f.key() + ": " + err);
    from.failed.insert(f.key());
  } else {
    from.failed.erase(f.key());  // an override that fixes a bad deck value
    f.set(deck, v);
  }
}

}  // namespace

Deck default_deck() { return Deck{}; }

namespace {
std::string node_kind(const YAML::Node& n) { return n.IsMap() ? "map" : n.IsSequence() ? "list" : "null"; }

// `empty_ok`: an empty text is the built-in default deck; a deck file must say something.
Deck parse_deck_text(const std::string& text, const std::string& origin,
                     const std::vector<std::string>& overrides, bool empty_ok) {
  Deck deck;
  deck.origin = origin;
  std::vector<std::string> problems;
  Provenance from;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(origin + ":" + std::to_string(e.mark.line + 1) +
                     ": not valid YAML: " + printable(e.msg));  // yaml-cpp quotes the bad byte raw
  }
  if (!empty_ok && (!root.IsDefined() || root.IsNull()))
    throw InputError(origin + ": the deck is empty (expected a map of sections: " + sections_text() +
                     "); run without a deck for the built-in default");
  if (root.IsDefined() && !root.IsNull()) {
    if (!root.IsMap())
      throw InputError(origin + ":1: a deck is a map of sections (" + sections_text() + ")");
    std::set<std::string> seen;
    for (const auto& sec : root) {
      const std::string at = origin + ":" + std::to_string(sec.first.Mark().line + 1);
      if (!sec.first.IsScalar()) {  // "? [a, b]: ..." is YAML, not a deck
        problems.push_back(at + ": expected a section name (" + sections_text() + "), got a " + node_kind(sec.first));
        continue;
      }
      const std::string sname = sec.first.Scalar();
      if (!is_section(sname)) {
        problems.push_back(at + ": " + printable(sname) + ": unknown section (valid: " + sections_text() + ")");
        continue;
      }
      if (sec.second.IsNull()) continue;
      if (!sec.second.IsMap()) {
        problems.push_back(at + ": " + sname + ": expected a map of fields (" + fields_of(sname) + ")");
        continue;
      }
      for (const auto& kv : sec.second) {
        const std::string fat = origin + ":" + std::to_string(kv.first.Mark().line + 1);
        if (!kv.first.IsScalar()) {
          problems.push_back(fat + ": " + sname + ": expected a field name (" + fields_of(sname) + "), got a " +
                             node_kind(kv.first));
          continue;
        }
        const std::string fname = kv.first.Scalar();
        const Field* f = find_field(sname, fname);
        if (!f) {
          problems.push_back(fat + ": " + sname + "." + printable(fname) + ": unknown field (valid in " +
                             sname + ": " + fields_of(sname) + ")");
          continue;
        }
        if (!seen.insert(f->key()).second) {
          problems.push_back(fat + ": " + f->key() + ": given twice");
          continue;
        }
        if (!kv.second.IsScalar()) {
          from.failed.insert(f->key());
          problems.push_back(fat + ": " + f->key() + ": expected " + range_text(*f) + ", got a " + node_kind(kv.second));
          continue;
        }
        apply(deck, *f, kv.second.Scalar(), fat, problems, from);
      }
    }
  }
  for (const auto& o : overrides) {
    const auto eq = o.find('=');
    const auto dot = o.find('.');
    const std::string where = "command line";
    if (eq == std::string::npos || dot == std::string::npos || dot > eq) {
      problems.push_back(where + ": \"" + printable(o) + "\": an override is section.field=value, e.g. train.steps=10");
      continue;
    }
    const std::string sname = o.substr(0, dot), fname = o.substr(dot + 1, eq - dot - 1);
    const Field* f = find_field(sname, fname);
    if (!f) {
      problems.push_back(where + ": " + printable(sname) + "." + printable(fname) + ": unknown field" +
                         (is_section(sname) ? " (valid in " + sname + ": " + fields_of(sname) + ")"
                                            : " (sections: " + sections_text() + ")"));
      continue;
    }
    apply(deck, *f, o.substr(eq + 1), where, problems, from);
  }
  check_relations(deck, origin, from, problems);
  if (!problems.empty()) throw InputError::from_list(problems);
  return deck;
}

}  // namespace

Deck parse_deck(const std::string& text, const std::string& origin,
                const std::vector<std::string>& overrides) {
  return parse_deck_text(text, origin, overrides, true);
}

Deck load_deck(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(path + ": is a directory, not a deck file");
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open the deck file (" + std::strerror(errno) + ")");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw InputError(path + ": cannot read the deck file (" + std::strerror(errno) + ")");
  return parse_deck_text(ss.str(), path, overrides, false);
}

std::string Deck::to_yaml() const {
  std::string out, section;
  for (const auto& f : schema()) {
    if (f.section != section) {
      section = f.section;
      out += section + ":\n";
    }
    std::string v = f.get(*this);
    if (f.kind == Kind::Text || f.kind == Kind::Choice) v = yaml_quote(v);
    out += "  " + f.name + ": " + v + "\n";
  }
  return out;
}

std::string Deck::to_json() const {
  std::string out = "{", section;
  for (const auto& f : schema()) {
    if (f.section != section) {
      out += (section.empty() ? "" : "}, ") + std::string("\"") + f.section + "\": {";
      section = f.section;
    } else {
      out += ", ";
    }
    std::string v = f.get(*this);
    if (f.kind == Kind::Text || f.kind == Kind::Choice) v = json_quote(v);
    out += "\"" + f.name + "\": " + v;
  }
  return out + "}}";
}

std::vector<std::string> unsupported_features(const Deck& d) {
  std::vector<std::string> out;
  auto no = [&](const std::string& field, const std::string& value, const std::string& supported) {
    out.push_back(d.origin + ": " + field + "=" + value + ": not implemented in this build (supported: " +
                  supported + ")");
  };
  if (d.model.tie_embeddings != "false") no("model.tie_embeddings", d.model.tie_embeddings, "false");
  if (d.train.precision != "fp32") no("train.precision", d.train.precision, "fp32");
  return out;
}

std::string deck_help() {
  std::string out, section;
  for (const auto& f : schema()) {
    if (f.section != section) {
      section = f.section;
      out += section + ":\n";
    }
    out += "  " + f.name + " (" + range_text(f) + "; default " + f.get(Deck{}) + ")\n      " +
           f.doc + "\n";
  }
  return out;
}

}  // namespace mini5d
