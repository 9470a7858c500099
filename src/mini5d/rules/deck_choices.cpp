// SPDX-License-Identifier: BSD-3-Clause
// The spellings of the deck's choices: each enum's to_string is the one table, and
// parse_choice searches it, so a value reads back as what it prints.
#include "mini5d/rules/deck_choices.hpp"

#include <initializer_list>

namespace mini5d {

namespace {

template <class E>
bool find_spelling(const std::string& s, std::initializer_list<E> values, E& out) {
  for (const E v : values)
    if (s == to_string(v)) return out = v, true;
  return false;
}

}  // namespace

const char* to_string(Attention v) { return v == Attention::full ? "full" : "blockwise"; }
const char* to_string(Norm v) { return v == Norm::rmsnorm ? "rmsnorm" : "layernorm"; }
const char* to_string(Mlp v) { return v == Mlp::swiglu ? "swiglu" : "gelu"; }
const char* to_string(Positions v) { return v == Positions::rope ? "rope" : "learned"; }
const char* flag_text(bool v) { return v ? "true" : "false"; }

const char* to_string(Schedule v) {
  switch (v) {
    case Schedule::gpipe: return "gpipe";
    case Schedule::one_f_one_b: return "1f1b";
    case Schedule::interleaved: return "interleaved";
  }
  return "?";
}

const char* to_string(Recompute v) {
  switch (v) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

const char* to_string(Precision v) {
  switch (v) {
    case Precision::fp32: return "fp32";
    case Precision::bf16: return "bf16";
    case Precision::fp64: return "fp64";
  }
  return "?";
}

const char* to_string(DataSource v) {
  switch (v) {
    case DataSource::markov: return "markov";
    case DataSource::text: return "text";
    case DataSource::tokens: return "tokens";
  }
  return "?";
}

const char* to_string(Toggle v) {
  switch (v) {
    case Toggle::automatic: return "auto";
    case Toggle::on: return "true";
    case Toggle::off: return "false";
  }
  return "?";
}

bool parse_choice(const std::string& s, Attention& out) {
  return find_spelling(s, {Attention::blockwise, Attention::full}, out);
}
bool parse_choice(const std::string& s, Norm& out) { return find_spelling(s, {Norm::layernorm, Norm::rmsnorm}, out); }
bool parse_choice(const std::string& s, Mlp& out) { return find_spelling(s, {Mlp::gelu, Mlp::swiglu}, out); }
bool parse_choice(const std::string& s, Positions& out) {
  return find_spelling(s, {Positions::learned, Positions::rope}, out);
}
bool parse_choice(const std::string& s, Schedule& out) {
  return find_spelling(s, {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved}, out);
}
bool parse_choice(const std::string& s, Recompute& out) {
  return find_spelling(s, {Recompute::none, Recompute::selective, Recompute::full}, out);
}
bool parse_choice(const std::string& s, Precision& out) {
  return find_spelling(s, {Precision::fp32, Precision::bf16, Precision::fp64}, out);
}
bool parse_choice(const std::string& s, DataSource& out) {
  return find_spelling(s, {DataSource::markov, DataSource::text, DataSource::tokens}, out);
}
bool parse_choice(const std::string& s, Toggle& out) {
  return find_spelling(s, {Toggle::automatic, Toggle::on, Toggle::off}, out);
}
bool parse_choice(const std::string& s, bool& out) {
  if (s == flag_text(true)) return out = true, true;
  if (s == flag_text(false)) return out = false, true;
  return false;
}

}  // namespace mini5d
