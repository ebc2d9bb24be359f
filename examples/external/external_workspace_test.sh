#!/usr/bin/env bash
# Builds and runs examples/external as a workspace of its own that depends on
# this checkout through local_repository (README.md, "Using Tandem from another
# Bazel workspace"). A nested Bazel with its own output root: the first run
# compiles the whole library (tens of minutes on 2 cores; later runs hit the
# disk cache), so it is tagged manual: `bazel test //...` leaves it out.
#
#   bazel test //examples/external:external_workspace_test
set -euo pipefail
here="$(dirname "$(readlink -f "$0")")"
# The runfiles link to the checkout's files: examples/external/ of the checkout.
tandem="$(cd "$(dirname "$(readlink -f "$here/hello_tandem.cc")")/../.." && pwd)"
[[ -f "$tandem/WORKSPACE" && -f "$tandem/BUILD" ]] || { echo "no checkout at $tandem"; exit 1; }
work="${TEST_TMPDIR:-$(mktemp -d)}/hello_tandem"
rm -rf "$work" && mkdir -p "$work"
cp "$here/hello_tandem.cc" "$work/"
cp "$here/BUILD.external" "$work/BUILD"
cp "$here/bazelrc.external" "$work/.bazelrc"
sed "s|@TANDEM@|$tandem|" "$here/WORKSPACE.external" > "$work/WORKSPACE"
cd "$work"
export HOME="${TEST_TMPDIR:-$work}/home" && mkdir -p "$HOME"
bazel_flags=(--output_user_root="${TEST_TMPDIR:-$work}/bazel_root")
build_flags=(--disk_cache=/root/.cache/bazel-disk-external --repo_env=TANDEM_CUDA=0)
bazel "${bazel_flags[@]}" build "${build_flags[@]}" //:hello_tandem
out="$(bazel-bin/hello_tandem)"
echo "$out"
bazel "${bazel_flags[@]}" shutdown
[[ "$(echo "$out" | grep -c '^step [0-2] loss ')" == 3 ]] || { echo "FAILED: 3 steps expected"; exit 1; }
first=$(echo "$out" | awk 'NR==1{print $4}'); last=$(echo "$out" | awk 'NR==3{print $4}')
awk -v a="$first" -v b="$last" 'BEGIN{exit !(b < a)}' || { echo "FAILED: loss $first -> $last"; exit 1; }
echo "PASSED: an out-of-tree workspace built and trained with @tandem//:tandem"
