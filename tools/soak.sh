#!/usr/bin/env bash
# Soak run, not in CI: 200,000 steps of workload 2 (the crop model) and
# 20,000 training steps of the embedding model on sim:0, printing the
# allocators' bytes in use / peak and RSS at intervals; fails unless they
# stay flat and the embedding losses equal a short fresh run's.
#
#   tools/soak.sh                                        # the full counts
#   tools/soak.sh --workload2_steps=20000 --embedding_steps=2000   # shorter
#   SOAK_BAZEL_FLAGS= tools/soak.sh --place=gpu:0        # with CUDA
#
# Flags after the script name go to the binary (tests/soak/soak.cc).
set -euo pipefail
cd "$(dirname "$0")/.."
bazel build ${SOAK_BAZEL_FLAGS---config=nocuda} //tests/soak:soak
exec bazel-bin/tests/soak/soak "$@"
