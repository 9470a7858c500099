// SPDX-License-Identifier: BSD-3-Clause
// The deck parser: a deck file and command-line overrides checked against the schema
// (deck_schema.cpp) and against each other, every problem reported at once.
#include "mini5d/core/deck.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <utility>

#include "mini5d/core/deck_blame.hpp"
#include "mini5d/core/deck_schema.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/core/printable.hpp"
#include "mini5d/core/regular_file.hpp"
#include "mini5d/core/stage_layers_text.hpp"
#include "mini5d/rules/vocab_padding.hpp"

namespace mini5d {

using deck_schema::Field;
using deck_schema::Kind;
using deck_schema::fields_of;
using deck_schema::find_field;
using deck_schema::fmt_real;
using deck_schema::is_section;
using deck_schema::range_text;
using deck_schema::schema;
using deck_schema::sections_text;

// Bounds on what a deck may hold, far above any real deck (the shipped ones are under
// 3 KiB, a path under PATH_MAX, and stage_layers has at most model.layers <= 1024
// entries) and low enough that a hostile deck (a million keys, a 50 MB number, a
// 3M-item list) is refused in well under a second instead of being parsed into
// hundreds of MB of YAML nodes and one message per key (docs/inputs.md, "Input decks").
constexpr std::size_t kMaxDeckBytes = std::size_t{256} << 10;  // the deck file
constexpr std::size_t kMaxValueBytes = 4096;                   // one value, deck or command line
constexpr std::size_t kMaxListItems = 1024;                    // one YAML list (stage_layers)

namespace {

// Checks one scalar against its field; returns "" when valid, else what is wrong.
std::string check_value(const Field& f, const std::string& v) {
  const std::string want = "expected " + range_text(f) + ", got \"" + printable(v) + "\"";
  if (v.size() > kMaxValueBytes)
    return want + " (a value of " + std::to_string(v.size()) + " bytes; at most " + std::to_string(kMaxValueBytes) + ")";
  // A NUL (YAML's "\0" or "\x00") would end the value wherever it is read as a C string:
  // "32\0junk" would read as 32 and a path would lose its tail.
  if (const auto nul = v.find('\0'); nul != std::string::npos)
    return want + " (a NUL byte at offset " + std::to_string(nul) + ")";
  if (f.kind == Kind::Text) return "";
  if (f.kind == Kind::Counts) {
    StageLayers counts;
    const std::string why = parse_stage_layers(v, counts);
    return why.empty() ? "" : want + " (" + why + ")";
  }
  if (f.kind == Kind::Choice) {
    for (const auto& c : f.choices)
      if (c == v) return "";
    return want;
  }
  if (f.kind == Kind::IntOrAuto && v == "auto") return "";
  if (v.empty()) return want;
  char* end = nullptr;
  errno = 0;
  if (f.kind == Kind::Int || f.kind == Kind::IntOrAuto) {
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
  if (d.model.positions == Positions::rope && d.model.heads > 0 && d.model.d_model % d.model.heads == 0 &&
      (d.model.d_model / d.model.heads) % 2 != 0)
    bad("model.positions", "rope turns pairs of a head's columns: model.d_model / model.heads must be even, got " +
                               std::to_string(d.model.d_model / d.model.heads));
  if (d.model.kv_heads > 0 && d.model.heads % d.model.kv_heads != 0)
    bad("model.kv_heads", "must divide model.heads=" + std::to_string(d.model.heads) +
                              " (0 for heads), got " + std::to_string(d.model.kv_heads));
  // The kernels index a micro-batch's token rows with 32-bit integers (every larger
  // size, such as heads x seq^2 of the attention scores, is 64-bit).
  if (std::int64_t(d.train.micro_batch) * d.model.seq > std::numeric_limits<int>::max())
    bad("train.micro_batch", "train.micro_batch x model.seq must be at most 2^31-1 tokens per micro-batch, got " +
                                 std::to_string(std::int64_t(d.train.micro_batch) * d.model.seq));
  if (d.train.min_lr > d.train.lr)
    bad("train.min_lr", "must be at most train.lr=" + fmt_real(d.train.lr) + ", got " +
                            fmt_real(d.train.min_lr));
  if (d.checkpoint.every_auto && !(d.checkpoint.node_mtbf_hours > 0))
    bad("checkpoint.every", "auto needs checkpoint.node_mtbf_hours > 0 (one node's mean time between failures, in hours)");
  if (d.data.source != DataSource::markov && d.data.path.empty())
    bad("data.path", std::string("required when data.source=") + to_string(d.data.source));
  // The padded vocabulary (rules/vocab_padding.hpp) is indexed with 32-bit integers.
  if (const long long vp = padded_vocab(d.model.vocab, d.model.vocab_pad_to, d.parallel.t);
      vp > std::numeric_limits<int>::max())
    bad("model.vocab_pad_to", "model.vocab padded to a multiple of vocab_pad_to x parallel.t must be at most 2^31-1 "
                              "rows, got " + std::to_string(vp));
  if (d.data.source == DataSource::text && d.model.vocab != 256)
    bad("model.vocab", "must be 256 for data.source=text (bytes), got " +
                           std::to_string(d.model.vocab));
  if (d.data.source == DataSource::markov) {
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
  for (auto& k : fields_named(what)) keys.push_back(std::move(k));
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

// The deck being read, the problems found so far, and where each field's value came
// from; every problem is collected, so one run of the parser reports them all.
struct Reading {
  Deck deck;
  std::vector<std::string> problems;
  Provenance from;
  // Past the lines a message shows (InputError::from_list), a flood of unknown keys is
  // only counted: an empty entry each, with no message composed.
  bool counting_only() const { return problems.size() >= InputError::kShownProblems; }
};

// The fields of section `sname`, each checked and applied; `seen` catches a field given
// twice.
void read_fields(const YAML::Node& fields, const std::string& sname, const std::string& origin,
                 std::set<std::string>& seen, Reading& r) {
  for (const auto& kv : fields) {
    const std::string fat = origin + ":" + std::to_string(kv.first.Mark().line + 1);
    if (!kv.first.IsScalar()) {
      r.problems.push_back(fat + ": " + sname + ": expected a field name (" + fields_of(sname) + "), got a " +
                           node_kind(kv.first));
      continue;
    }
    const std::string fname = kv.first.Scalar();
    const Field* f = find_field(sname, fname);
    if (!f && r.counting_only()) {
      r.problems.emplace_back();
      continue;
    }
    if (!f) {
      r.problems.push_back(fat + ": " + sname + "." + printable(fname) + ": unknown field (valid in " +
                           sname + ": " + fields_of(sname) + ")");
      continue;
    }
    if (!seen.insert(f->key()).second) {
      r.problems.push_back(fat + ": " + f->key() + ": given twice");
      continue;
    }
    if (kv.second.IsSequence() && kv.second.size() > kMaxListItems) {
      r.from.failed.insert(f->key());
      r.problems.push_back(fat + ": " + f->key() + ": expected " + range_text(*f) + ", got a list of " +
                           std::to_string(kv.second.size()) + " items (at most " + std::to_string(kMaxListItems) + ")");
      continue;
    }
    // A list field's YAML list reads as the command line's "3,5".
    if (f->kind == Kind::Counts && kv.second.IsSequence()) {
      std::string joined;
      bool scalars = true;
      for (const auto& item : kv.second) {
        scalars = scalars && item.IsScalar();
        if (scalars) joined += (joined.empty() ? "" : ",") + item.Scalar();
      }
      if (scalars) {
        apply(r.deck, *f, joined, fat, r.problems, r.from);
        continue;
      }
    }
    if (!kv.second.IsScalar()) {
      r.from.failed.insert(f->key());
      r.problems.push_back(fat + ": " + f->key() + ": expected " + range_text(*f) + ", got a " + node_kind(kv.second));
      continue;
    }
    apply(r.deck, *f, kv.second.Scalar(), fat, r.problems, r.from);
  }
}

// A deck file's map of sections (`root` is neither undefined nor null). Returns how many
// fields it set.
std::size_t read_sections(const YAML::Node& root, const std::string& origin, Reading& r) {
  if (!root.IsMap())
    throw InputError(origin + ":1: a deck is a map of sections (" + sections_text() + ")");
  std::set<std::string> seen;
  for (const auto& sec : root) {
    const std::string at = origin + ":" + std::to_string(sec.first.Mark().line + 1);
    if (!sec.first.IsScalar()) {  // "? [a, b]: ..." is YAML, not a deck
      r.problems.push_back(at + ": expected a section name (" + sections_text() + "), got a " + node_kind(sec.first));
      continue;
    }
    const std::string sname = sec.first.Scalar();
    if (!is_section(sname)) {
      if (r.counting_only()) {
        r.problems.emplace_back();
        continue;
      }
      r.problems.push_back(at + ": " + printable(sname) + ": unknown section (valid: " + sections_text() + ")");
      continue;
    }
    if (sec.second.IsNull()) continue;
    if (!sec.second.IsMap()) {
      r.problems.push_back(at + ": " + sname + ": expected a map of fields (" + fields_of(sname) + ")");
      continue;
    }
    read_fields(sec.second, sname, origin, seen, r);
  }
  return seen.size();
}

// section.field=value from the command line, over what the deck file said.
void apply_overrides(const std::vector<std::string>& overrides, Reading& r) {
  for (const auto& o : overrides) {
    const auto eq = o.find('=');
    const auto dot = o.find('.');
    const std::string where = "command line";
    if (eq == std::string::npos || dot == std::string::npos || dot > eq) {
      r.problems.push_back(where + ": \"" + printable(o) + "\": an override is section.field=value, e.g. train.steps=10");
      continue;
    }
    const std::string sname = o.substr(0, dot), fname = o.substr(dot + 1, eq - dot - 1);
    const Field* f = find_field(sname, fname);
    if (!f) {
      r.problems.push_back(where + ": " + printable(sname) + "." + printable(fname) + ": unknown field" +
                           (is_section(sname) ? " (valid in " + sname + ": " + fields_of(sname) + ")"
                                              : " (sections: " + sections_text() + ")"));
      continue;
    }
    apply(r.deck, *f, o.substr(eq + 1), where, r.problems, r.from);
  }
}

// The line (from 1) of a marker that starts a second YAML document ("---" at the start of
// a line, after content), or 0. A text scan, not yaml-cpp's LoadAll, which loops for ever
// on some malformed input (found by fuzz_deck). A deck is a map, so a block scalar's
// lines are indented and never start with the marker.
int second_document_line(const std::string& text) {
  bool content = false;
  int line = 0;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string l = text.substr(at, end - at);
    ++line;
    at = end + 1;
    const bool marker = l.rfind("---", 0) == 0 && (l.size() == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r');
    if (marker && content) return line;
    const std::size_t first = l.find_first_not_of(" \t\r");
    if (marker || first == std::string::npos || l[first] == '#' || l.rfind("%", 0) == 0) continue;
    content = true;
  }
  return 0;
}

// `empty_ok`: an empty text is the built-in default deck; a deck file must say something.
Deck parse_deck_text(const std::string& text, const std::string& origin_given,
                     const std::vector<std::string>& overrides, bool empty_ok) {
  // The origin is a path the user typed: quoted and cut like any value in messages.
  const std::string origin = printable_path(origin_given);
  Reading r;
  r.deck.origin = origin;
  r.deck.overrides = overrides;
  // A raw NUL is not text; yaml-cpp would misreport it (as an unknown escape).
  if (const auto nul = text.find('\0'); nul != std::string::npos)
    throw InputError(origin + ":" + std::to_string(1 + std::count(text.begin(), text.begin() + nul, '\n')) +
                     ": a NUL byte; a deck is text");
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(origin + ":" + std::to_string(e.mark.line + 1) +
                     ": not valid YAML: " + printable(e.msg));  // yaml-cpp quotes the bad byte raw
  }
  // Load reads the first document only and ignores the rest: refuse a second one.
  if (const int line = second_document_line(text); line > 0)
    throw InputError(origin + ":" + std::to_string(line) + ": a second YAML document; a deck is one document");
  if (!empty_ok && (!root.IsDefined() || root.IsNull()))
    throw InputError(origin + ": the deck is empty (expected a map of sections: " + sections_text() +
                     "); run without a deck for the built-in default");
  if (root.IsDefined() && !root.IsNull()) {
    // `{}` or a bare `model:` sets nothing: most likely not the file meant.
    if (read_sections(root, origin, r) == 0 && r.problems.empty() && !empty_ok)
      throw InputError(origin + ": the deck sets no field (expected a map of sections: " + sections_text() +
                       "); run without a deck for the built-in default");
  }
  apply_overrides(overrides, r);
  check_relations(r.deck, origin, r.from, r.problems);
  if (!r.problems.empty()) throw InputError::from_list(r.problems);
  return r.deck;
}

}  // namespace

std::string Deck::source() const {
  std::string s = origin;
  for (std::size_t i = 0; i < overrides.size(); ++i) s += (i == 0 ? " with " : " ") + printable(overrides[i]);
  return s;
}

Deck parse_deck(const std::string& text, const std::string& origin,
                const std::vector<std::string>& overrides) {
  return parse_deck_text(text, origin, overrides, true);
}

Deck load_deck(const std::string& path, const std::vector<std::string>& overrides) {
  const std::string shown = printable_path(path);
  // Only a regular file is a deck: a FIFO, device or socket would block the open or the
  // read (a FIFO with no writer waits for ever). The reader refuses them unopened.
  const FileRead r = read_regular_file(path, kMaxDeckBytes);
  switch (r.status) {
    case FileRead::Status::ok:
      break;
    case FileRead::Status::directory:
      throw InputError(shown + ": is a directory, not a deck file");
    case FileRead::Status::not_regular:
      throw InputError(shown + ": is not a regular file (a FIFO, device or socket), not a deck file");
    case FileRead::Status::too_large:
      throw InputError(shown + ": the deck file is " + r.why);
    case FileRead::Status::cannot_open:
      throw InputError(shown + ": cannot open the deck file (" + r.why + ")");
    case FileRead::Status::cannot_read:
      throw InputError(shown + ": cannot read the deck file (" + r.why + ")");
  }
  return parse_deck_text(r.text, path, overrides, false);
}

}  // namespace mini5d
