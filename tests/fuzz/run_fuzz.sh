#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fuzzes the deck parser and the token/text file readers with libFuzzer
# under AddressSanitizer and UndefinedBehaviorSanitizer: builds both harnesses with
# clang, replays the checked-in regression corpus (tests/fuzz/corpus: inputs that once
# crashed, deep nesting, NUL bytes, huge numbers, non-UTF-8, corrupt token headers) and
# a 50 MB line, then fuzzes each for a bounded time. New inputs go to WORKDIR, never to
# the source tree. Skips (77) where clang has no libFuzzer (Debian: clang and
# libclang-rt-14-dev, installed by scripts/setup-debian.sh).
# usage: run_fuzz.sh WORKDIR SOURCE_DIR SECONDS_EACH INCLUDE_DIR...   (each may be a ;-list)
set -u
work=$1 src=$2 seconds=$3; shift 3
includes=()
for arg in "$@"; do
  IFS=';' read -ra dirs <<< "$arg"
  for d in "${dirs[@]}"; do [[ -n $d ]] && includes+=("-I$d"); done
done
cxx=${MINI5D_FUZZ_CXX:-clang++}
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' > probe.cpp
"$cxx" -fsanitize=fuzzer probe.cpp -o probe > /dev/null 2>&1 || { echo "SKIP: $cxx cannot build libFuzzer targets"; exit 77; }
# MINI5D_FUZZ_CXXFLAGS: what the Kokkos headers need besides (-fopenmp for an OpenMP Kokkos).
read -ra extra <<< "${MINI5D_FUZZ_CXXFLAGS:-}"
flags=(-std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I"$src/src" "${includes[@]}"
       "${extra[@]}")
# The deck parser's sources: what mini5d_deck (src/mini5d/core/CMakeLists.txt) and the
# rules below it (src/mini5d/rules/CMakeLists.txt) link for load_deck and parse_deck; a
# new one there belongs here too.
"$cxx" "${flags[@]}" "$src/tests/fuzz/fuzz_deck.cpp" "$src/src/mini5d/core/deck.cpp" "$src/src/mini5d/core/deck_schema.cpp" \
  "$src/src/mini5d/core/deck_output.cpp" "$src/src/mini5d/rules/stage_split.cpp" "$src/src/mini5d/core/deck_blame.cpp" \
  "$src/src/mini5d/core/stage_layers_text.cpp" "$src/src/mini5d/rules/deck_choices.cpp" "$src/src/mini5d/core/regular_file.cpp" \
  -lyaml-cpp -o fuzz_deck ||
  { echo "FAIL: building fuzz_deck"; exit 1; }
"$cxx" "${flags[@]}" "$src/tests/fuzz/fuzz_token_file.cpp" "$src/src/mini5d/data/file_sources.cpp" \
  "$src/src/mini5d/core/regular_file.cpp" -o fuzz_token_file ||
  { echo "FAIL: building fuzz_token_file"; exit 1; }
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
python3 -c "open('line50m.yaml','w').write('# ' + 'x' * 50000000 + '\nmodel:\n  vocab: 16\n')"
run() {  # NAME CORPUS MAX_LEN: replay, then fuzz
  local name=$1 corpus=$2 maxlen=$3
  mkdir -p "new-$name"
  ./"$name" -runs=0 -rss_limit_mb=4096 -timeout=60 "$corpus" > "$name-replay.log" 2>&1 ||
    { echo "FAIL: $name on the regression corpus"; tail -40 "$name-replay.log"; exit 1; }
  ./"$name" -max_total_time="$seconds" -max_len="$maxlen" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$work/$name-" \
    "new-$name" "$corpus" > "$name-fuzz.log" 2>&1 ||
    { echo "FAIL: $name found a crash (inputs: $work/$name-*)"; grep -E "ERROR|runtime error|SUMMARY" "$name-fuzz.log" | head; exit 1; }
  echo "ok: $name: $(grep -Eo 'Done [0-9]+ runs in [0-9]+ second' "$name-fuzz.log")s, corpus replayed"
}
./fuzz_deck -rss_limit_mb=4096 -timeout=120 line50m.yaml > line50m.log 2>&1 || { echo "FAIL: fuzz_deck on a 50 MB line"; tail -20 line50m.log; exit 1; }
run fuzz_deck "$src/tests/fuzz/corpus/deck" 4096
run fuzz_token_file "$src/tests/fuzz/corpus/tokens" 1024
