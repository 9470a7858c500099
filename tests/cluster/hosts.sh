#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The test hosts: distinct host names, each with only its loopback and its eth0 on the
# bridge, a route to the bridge's /24 and none anywhere else, every other host
# reachable over the bridge, and the shaped link's rate within 20% of the cluster
# file's, measured here with a TCP stream each way between the first two hosts.
# usage: hosts.sh
source "$(dirname "$0")/common.sh"
require_cluster
((${#HOSTS[@]} >= 2)) || fail "the cluster has ${#HOSTS[@]} host(s); at least 2 are needed"

names=()
for i in "${!HOSTS[@]}"; do
  h=${HOSTS[$i]}
  name=$(in_host "$h" hostname) || fail "cannot enter $h"
  names+=("$name")
  links=$(in_host "$h" ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | sort | tr '\n' ' ')
  [[ $links == "eth0 lo " ]] || fail "$h has links '$links', expected only eth0 and lo"
  routes=$(in_host "$h" ip route show)
  [[ $routes == "${ADDRS[$i]%.*}.0/24 dev eth0 "* && $(wc -l <<<"$routes") -eq 1 ]] ||
    fail "$h's routes are not just the bridge's /24: $routes"
  # An address off the bridge (TEST-NET-1) has no route from a test host.
  if in_host "$h" ip route get 192.0.2.1 > /dev/null 2>&1; then fail "$h has a route to 192.0.2.1"; fi
  qdisc=$(in_host "$h" tc qdisc show dev eth0)
  [[ $qdisc == *tbf* ]] || fail "$h's eth0 is not shaped: $qdisc"
done
distinct=$(printf '%s\n' "${names[@]}" | sort -u | wc -l)
((distinct == ${#HOSTS[@]})) || fail "host names are not distinct: ${names[*]}"
[[ ${names[*]} != *"$(hostname)"* ]] || fail "a test host has this machine's name: ${names[*]}"
echo "hosts: ${names[*]} at ${ADDRS[*]}, only eth0 and lo, no route off the bridge"

# Each way between the first two hosts, 2 s each: the receiver's rate against the file's.
for pair in "${HOSTS[1]} ${HOSTS[0]}" "${HOSTS[0]} ${HOSTS[1]}"; do
  read -r to from <<<"$pair"
  got=$("$root/scripts/cluster-link-rate.sh" "$to" "$from" 2) || fail "no TCP stream from $from to $to"
  err=$(awk -v g="$got" -v r="$RATE" 'BEGIN {printf "%.1f", 100 * (g - r) / r}')
  echo "link $from -> $to: $((got / 1000000)) MB/s measured, $((RATE / 1000000)) MB/s configured (${err}%)"
  awk -v e="$err" 'BEGIN {exit !(e >= -20 && e <= 20)}' || fail "the link rate is ${err}% off the configured rate"
done
echo "PASS"
