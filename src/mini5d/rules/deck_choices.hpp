// SPDX-License-Identifier: BSD-3-Clause
// The deck's choice fields as enums, one per concept, shared by the runtime and the
// planner (plan/, apps/mini5d_plan.cpp) so that neither compares a deck value as text.
// The spelling of each value lives once, in its to_string; parse_choice reads the
// same spellings back. Small on purpose: the pipeline schedules, the model and the
// planner include it without the whole deck (core/deck.hpp).
#pragma once
#include <string>

namespace mini5d {

enum class Attention { blockwise, full };      // model.attention (c = 1 core)
enum class Norm { layernorm, rmsnorm };         // model.norm
enum class Mlp { gelu, swiglu };                // model.mlp
enum class Positions { learned, rope };         // model.positions
enum class Schedule { gpipe, one_f_one_b, interleaved };  // parallel.schedule
enum class Recompute { none, selective, full };           // train.recompute
// train.precision, parallel.grad_reduce_dtype (fp32 | bf16) and mini5d-plan --precision.
// GCC's -Wshadow says the enumerator shadows the type mini5d::bf16 (kernels/bf16.hpp)
// where both are seen; a scoped enumerator is always written Precision::bf16, so nothing
// is hidden.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
enum class Precision { fp32, bf16, fp64 };
#pragma GCC diagnostic pop
enum class DataSource { markov, text, tokens };  // data.source
// auto | true | false: parallel.gpu_aware_mpi, output.kernel_profile.
enum class Toggle { automatic, on, off };

const char* to_string(Attention v);
const char* to_string(Norm v);
const char* to_string(Mlp v);
const char* to_string(Positions v);
const char* to_string(Schedule v);
const char* to_string(Recompute v);
const char* to_string(Precision v);
const char* to_string(DataSource v);
const char* to_string(Toggle v);
// A boolean field's spelling: "true" | "false".
const char* flag_text(bool v);

// The value whose to_string is `s`, into `out`; false (out untouched) when none is.
bool parse_choice(const std::string& s, Attention& out);
bool parse_choice(const std::string& s, Norm& out);
bool parse_choice(const std::string& s, Mlp& out);
bool parse_choice(const std::string& s, Positions& out);
bool parse_choice(const std::string& s, Schedule& out);
bool parse_choice(const std::string& s, Recompute& out);
bool parse_choice(const std::string& s, Precision& out);
bool parse_choice(const std::string& s, DataSource& out);
bool parse_choice(const std::string& s, Toggle& out);
bool parse_choice(const std::string& s, bool& out);  // "true" | "false"

}  // namespace mini5d
