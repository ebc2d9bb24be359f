#!/usr/bin/env bash
# mpirun -np 2 of mpi_data_parallel_worker, one job per case, each job's two
# processes one rank each: on sim processes the MLP, CNN and CTR (host
# tables per process), on cpu processes the MLP and CTR, match the
# one-device run and the ranks stay bitwise equal (the CNN on cpu is left
# out: oneDNN's convolutions sum a batch of 4 in another order than one of
# 8, and 20 steps of the CNN grow that past float32's tolerance; the sim
# kernels sum alike at any batch); a checkpoint saved once resumes on one device; a bad input
# on rank 1 fails both ranks naming it; a killed rank 1 makes rank 0 fail
# within its deadline naming rank 1 (mpirun --enable-recovery keeps rank 0
# alive to say so). Every job is bounded by `timeout`: nothing hangs.
set -uo pipefail
worker="$(dirname "$0")/mpi_data_parallel_worker"
if ! command -v mpirun >/dev/null; then
  echo "FAILED: mpirun is missing (tools/setup.sh installs openmpi-bin)"
  exit 1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # CI runs as root
export OMPI_MCA_rmaps_base_oversubscribe=1                         # 2 ranks on any core count
# Bazel's per-test files are this script's: two gtest ranks sharing them
# race (one removes the premature-exit file the other then fails to remove,
# and its "[ ERROR ]" lands in the middle of its PASSED line).
unset TEST_PREMATURE_EXIT_FILE XML_OUTPUT_FILE GTEST_OUTPUT
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0

# job NAME PASSING_RANKS CLEAN MPIRUN_FLAGS -- WORKER_FLAGS...: the ranks
# whose tests must pass; CLEAN=1: mpirun must exit 0 too (a failed group
# skips MPI_Finalize, so the failure jobs end with a non-zero mpirun).
job() {
  local name=$1 ranks=$2 clean=$3 flags=$4
  shift 5
  local log="$tmp/$name.log"
  timeout 300 mpirun $flags --bind-to none --tag-output -np 2 "$worker" --gtest_color=no "$@" \
    >"$log" 2>&1
  local rc=$?
  local ok=1
  if ((rc == 124)); then ok=0; echo "FAILED: $name ran past 300 s"; fi
  for r in $ranks; do
    grep -qE "^\[1,$r\]<stdout>:\[  PASSED  \] [1-9][0-9]* tests?\." "$log" || ok=0
    if grep -q "^\[1,$r\]<stdout>:\[  FAILED  \]" "$log"; then ok=0; fi
  done
  if ((clean && rc != 0)); then ok=0; fi
  if ((ok)); then
    echo "PASSED: $name (ranks $ranks, mpirun exit $rc)"
  else
    echo "FAILED: $name (mpirun exit $rc); its output:"
    cat "$log"
    failures=$((failures + 1))
  fi
}

job match_sim "0 1" 1 "" -- --place=sim --gtest_filter='Models/MpiDataParallel.*'
job match_cpu "0 1" 1 "" -- --place=cpu \
  --gtest_filter='Models/MpiDataParallel.*/Mlp:Models/MpiDataParallel.*/Ctr'
job checkpoint "0 1" 1 "" -- --place=cpu --checkpoint_dir="$tmp" \
  --gtest_filter='MpiDataParallelCheckpoint.*'
job bad_input "0 1" 0 "" -- --place=sim \
  --gtest_filter='MpiDataParallelFailure.BadInputOnOneRankFailsEveryRankNamingIt'
job killed_rank "0" 0 "--enable-recovery" -- --place=cpu \
  --gtest_filter='MpiDataParallelFailure.KilledRankFailsTheOthersNamingIt'

if ((failures)); then
  echo "$failures job(s) failed"
  exit 1
fi
echo "all jobs passed"
