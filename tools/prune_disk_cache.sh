#!/usr/bin/env bash
# Keeps Bazel's disk cache (.bazelrc: --disk_cache) under a size limit.
# Bazel 4 never deletes from it, so every tree built (normal, TSan, fuzz)
# would stay forever: when it holds more than $TANDEM_DISK_CACHE_GB GiB
# (default 20), the entries read longest ago go until it holds 80% of that.
#
#   tools/prune_disk_cache.sh            # tools/test.sh runs it first
#   TANDEM_DISK_CACHE_GB=5 tools/prune_disk_cache.sh
set -euo pipefail
dir="${TANDEM_DISK_CACHE_DIR:-$HOME/.cache/tandem/bazel-disk-cache}"
max_gb="${TANDEM_DISK_CACHE_GB:-20}"
if ! [[ "$max_gb" =~ ^[0-9]+$ ]] || ((max_gb == 0)); then
  echo "prune_disk_cache: TANDEM_DISK_CACHE_GB must be a whole number of GiB above 0, got '$max_gb'" >&2
  exit 1
fi
[[ -d "$dir" ]] || exit 0
total_kb=$(du -sk "$dir" | cut -f1)
limit_kb=$((max_gb * 1024 * 1024))
((total_kb <= limit_kb)) && exit 0
target_kb=$((limit_kb * 8 / 10))
removed=0
while read -r _ kb path; do
  ((total_kb <= target_kb)) && break
  rm -f -- "$path"
  total_kb=$((total_kb - kb)); removed=$((removed + 1))
done < <(find "$dir" -type f -printf '%A@ %k %p\n' | sort -n)
echo "disk cache: removed $removed entries read longest ago; $dir now holds" \
     "$((total_kb / 1024)) MiB (limit ${max_gb} GiB)"
