#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Hostile decks get a quick answer (docs/inputs.md, "Input decks"): a deck over 256 KiB (a million
# unknown keys, a 50 MB number), a value over 4096 bytes (in the deck and on the command
# line) and a list over 1024 items are each refused in one line, status 2; a deck at the
# size limit full of unknown keys gives the first 20 problems and a count. Each run is
# killed after 20 s (the old parser took minutes and hundreds of MB on these).
# usage: deck_limits.sh WORKDIR MINI5D_APP
set -u
work=$1 app=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
# expect MESSAGE ARGS...: `check ARGS` exits 2 with the message once, within 20 s.
expect() { "$here/expect_error.sh" "$1" timeout -s KILL 20 "$app" check "${@:2}" || exit 1; }
python3 - <<'PY' || exit 1
with open("keys.yaml", "w") as f:
    f.write("model:\n" + "".join(f"  k{i}: 1\n" for i in range(1000000)))
with open("number.yaml", "w") as f:
    f.write("model:\n  seq: " + "1" * 50000000 + "\n")
with open("value.yaml", "w") as f:
    f.write("checkpoint:\n  dir: " + "a" * 5000 + "\n")
with open("list.yaml", "w") as f:
    f.write("parallel:\n  stage_layers: [" + ",".join(["1"] * 2000) + "]\n")
with open("flood.yaml", "w") as f:  # just under the limit
    f.write("model:\n" + "".join(f"  k{i}: 1\n" for i in range(20000)))
PY
expect "keys.yaml: the deck file is larger than the limit of 262144 bytes" keys.yaml
expect "number.yaml: the deck file is larger than the limit of 262144 bytes" number.yaml
expect "value.yaml:2: checkpoint.dir: expected a string, got \"aaaa" value.yaml
expect "(a value of 5000 bytes; at most 4096)" value.yaml
expect "list.yaml:2: parallel.stage_layers: expected auto, balanced or a list of positive integers such as [3, 5], got a list of 2000 items (at most 1024)" list.yaml
printf 'model:\n  layers: 2\n' > ok.yaml
expect "command line: checkpoint.dir: expected a string, got \"bbbb" ok.yaml "checkpoint.dir=$(head -c 5000 /dev/zero | tr '\0' b)"
expect "... and 19980 more problems" flood.yaml
