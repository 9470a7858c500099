#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A NUL in a deck value is refused, not read up to the NUL: YAML's
# "\x00" and "\0" escapes in a number and in a path, and a raw NUL byte in the file.
# usage: deck_nul.sh WORKDIR MINI5D_APP
set -u
work=$1 app=$2
expect=$(dirname "$0")/expect_error.sh
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
printf 'model:\n  seq: "32\\x00junk"\n' > escaped.yaml
printf 'data:\n  source: text\n  path: "in.txt\\0junk"\n' > path.yaml
printf 'model:\n  seq: 32\000junk\n' > raw.yaml
"$expect" 'escaped.yaml:2: model.seq: expected an integer in [1, 1048576], got "32\x00junk" (a NUL byte at offset 2)' \
  "$app" check escaped.yaml || exit 1
"$expect" 'path.yaml:3: data.path: expected a string, got "in.txt\x00junk" (a NUL byte at offset 6)' \
  "$app" check path.yaml || exit 1
"$expect" 'raw.yaml:2: a NUL byte; a deck is text' "$app" check raw.yaml || exit 1
