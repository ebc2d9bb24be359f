#!/usr/bin/env bash
# Workload 2 on the sim place: 1 H2D + 1 D2H per iteration with the slice on
# the device, none with the slice under device_guard("cpu").
set -euo pipefail
bin="$(dirname "$0")/crop_profile"
out=$("$bin" --place=sim:0 --iterations=20 --warmup=2)
echo "$out"
grep -q "slice on sim:0 : 1 H2D + 1 D2H copies per iteration" <<<"$out"
grep -q "slice on cpu   : 0 H2D + 0 D2H copies per iteration" <<<"$out"
