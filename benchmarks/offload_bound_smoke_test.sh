#!/usr/bin/env bash
# offload_bound on sim:0 with a small model: every term printed, the bound
# the largest of them, bad flags refused.
set -euo pipefail
bin="$(dirname "$0")/offload_bound"
out=$("$bin" --params=1000000 --place=sim:0 --threads=2 --repeats=2 --all_gpu_ms=1000 --offload_ms=1500)
echo "$out"
for line in "offload bound of 1.00 M parameters on sim:0" "host memory: " "pinned copies of 2.0 MB" \
  "CPU AdamW term: 28 B/param x 1.00 M = 0.03 GB" "transfer term: " "all-GPU step: 1000.00 ms" \
  "bound: 1000.00 ms" "offloaded step: 1500.00 ms = 1.50 x the bound; practicality 0.67"; do
  grep -qF "$line" <<<"$out" || { echo "FAILED: no '$line'"; exit 1; }
done
if "$bin" --repeats=0 2> /tmp/offload_bound_err; then echo "FAILED: no error"; exit 1; fi
grep -q "repeats must be >= 1" /tmp/offload_bound_err || { echo "FAILED: $(cat /tmp/offload_bound_err)"; exit 1; }
echo PASSED
