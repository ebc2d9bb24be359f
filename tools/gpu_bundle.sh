#!/usr/bin/env bash
# Builds every test, benchmark and example binary here and packs them, with
# the shared libraries a GPU machine lacks, into .bundle/tandem.tar.xz (kept
# under the device tool's 64 MiB limit; .bundle/ is git-ignored).
#
#   tools/gpu_bundle.sh                 # build + pack
#   # then, on the GPU machine (device tool: carry [".bundle"]):
#   tools/gpu_run.sh                    # runs every test, writes $OUT/tests.log
#   tools/gpu_run.sh -- examples_linear_regression --steps=300   # also a binary
#   tools/measure_concurrency.sh        # concurrent vs --in_order runs
#
# Libraries the GPU machine has (glibc, libstdc++, the CUDA runtime, cuBLAS
# and NCCL: the toolkit's or PyTorch's wheel's, see gpu_env.sh; libnccl is
# about 200 MB, past the device tool's limit) are not packed; everything else ldd lists is, and Debian's
# Fashion-MNIST files and fortunes corpus when they are installed here.
set -euo pipefail
cd "$(dirname "$0")/.."

bazel build //... >/dev/null
rm -rf .bundle/tandem .bundle/tandem.tar.xz && mkdir -p .bundle/tandem/bin .bundle/tandem/lib  # keeps gpu_python.sh's

# The Python extension (//python) is packed for the GPU machine's Python by tools/gpu_python.sh.
targets=$(bazel query 'kind("cc_test|cc_binary", //...) except //third_party/... except //python/...' 2>/dev/null)
tests=" $(bazel query 'kind(cc_test, //...)' 2>/dev/null | tr '\n' ' ') "
for t in $targets; do
  pkg=${t#//}; pkg=${pkg%%:*}; name=${t##*:}
  bin="bazel-bin/$pkg/$name"
  [[ -x "$bin" ]] || continue
  # The mpirun worker of tests/parallel:mpi_data_parallel_test runs cpu and
  # sim ranks (CI runs it); on the GPU machine it would only take space.
  [[ "$name" == mpi_data_parallel_worker ]] && continue
  # Host-only tools and benchmarks (the safetensors converter, the cpu
  # layer kernels' benchmark, the fuzzers' seed runners): nothing of theirs
  # differs on the GPU machine, and the bundle must stay under 64 MiB.
  # cpu_kernels_benchmark ships (0.6 MB packed): it times the optimizer
  # offload's host kernels (adam, casts, squared norms) on that machine's
  # host, whose cores and memory set the offloaded step.
  [[ "$t" == //tools:safetensors_convert || "$t" == //tests/fuzz:* ||
     ("$t" == //backends/cpu:*_benchmark && "$t" != //backends/cpu:cpu_kernels_benchmark) ]] &&
    continue
  flat="${pkg//\//_}_$name"
  cp "$bin" ".bundle/tandem/bin/$flat"
  # The fuzzers' regression tests read corpora that only Bazel passes them
  # (CPU-only; .ci/run runs them): shipped as binaries, not listed as tests.
  if [[ "$tests" == *" $t "* && "$name" != *_fuzzer_regression_test ]]; then
    echo "$flat" >> .bundle/tandem/tests.txt
  fi
done

# ldd runs on the bazel-bin originals: their rpath finds Bazel's own
# shared libraries (_solib_*), which are packed too.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|librt\.so|libpthread\.so|libstdc\+\+|libgcc_s|libcudart|libcublas|libcuda\.so|libnccl)'
for t in $targets; do
  pkg=${t#//}; pkg=${pkg%%:*}; name=${t##*:}
  f="bazel-bin/$pkg/$name"
  [[ -x "$f" ]] || continue
  if ldd "$f" | grep -q "not found"; then
    echo "gpu_bundle: $f has unresolved libraries:" >&2; ldd "$f" | grep "not found" >&2; exit 1
  fi
  ldd "$f" | awk '/=> \// {print $1, $3}' | while read -r soname path; do
    if [[ ! "$soname" =~ $skip && ! -e ".bundle/tandem/lib/$soname" ]]; then
      cp -L "$path" ".bundle/tandem/lib/$soname"
    fi
  done
done
strip --strip-unneeded .bundle/tandem/bin/* 2>/dev/null || true
# The files tests read by workspace-relative path (Bazel runs a test in its
# runfiles tree; gpu_run.sh runs the tests in tandem/src instead).
git ls-files '*/testdata/*' | while read -r f; do
  mkdir -p ".bundle/tandem/src/$(dirname "$f")" && cp "$f" ".bundle/tandem/src/$f"
done
# Fashion-MNIST (30 MB of .gz files, packed as they are) for the trainers; gpu_env.sh links it.
fmnist=/usr/share/datasets/fashion-mnist
if [[ -d "$fmnist" ]]; then cp -r "$fmnist" .bundle/tandem/fashion-mnist; fi
# The GPT example's corpus (Debian's fortunes, about 1 MB packed): the text
# files only, no symbolic links or indexes.
fortunes=/usr/share/games/fortunes
if [[ -d "$fortunes" ]]; then
  mkdir -p .bundle/tandem/fortunes
  find "$fortunes" -maxdepth 1 -type f ! -name '*.dat' -exec cp {} .bundle/tandem/fortunes/ \;
fi
XZ_OPT=-9 tar -C .bundle -cJf .bundle/tandem.tar.xz tandem
rm -rf .bundle/tandem
echo "bundle: $(du -h .bundle/tandem.tar.xz | cut -f1) in .bundle/tandem.tar.xz," \
     "$(tar -tJf .bundle/tandem.tar.xz | grep -c '/bin/.') binaries"
