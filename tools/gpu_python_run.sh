#!/usr/bin/env bash
# Runs on the GPU machine, over the bundle tools/gpu_python.sh made: the Python
# tests (the GPU ones included: DLPack with PyTorch on the GPU), then the
# Python examples on CUDAPlace(0). Prints "N passed, N failed" for the tests;
# logs go to $OUT (python_tests.log, python_examples.log) when it is set.
#
#   tools/gpu_python_run.sh                 # tests and examples
#   tools/gpu_python_run.sh --tests-only
#   tools/gpu_python_run.sh --rows=1000000  # a smaller embedding table
#
# Shared libraries come from the bundle's lib/ or, when it was packed with
# --no-libs, from gpu_bundle.sh's bundle (tools/gpu_env.sh, which also
# provides Fashion-MNIST when the machine lacks it).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bundle="$here/../.bundle/tandem_python.tar.xz"
[[ -f "$bundle" ]] || { echo "gpu_python_run: no $bundle (run tools/gpu_python.sh)" >&2; exit 1; }
tests_only=0
rows=10000000
for a in "$@"; do
  case "$a" in
    --tests-only) tests_only=1 ;;
    --rows=*) rows="${a#--rows=}" ;;
    *) echo "gpu_python_run: unknown argument '$a'" >&2; exit 2 ;;
  esac
done
rm -rf /tmp/tandem_python && tar -C /tmp -xJf "$bundle"
root=/tmp/tandem_python
if [[ -f "$here/../.bundle/tandem.tar.xz" ]]; then source "$here/gpu_env.sh"; fi
_pip_lib() { python3 -c "import $1, os; print(os.path.join(list($1.__path__)[0], 'lib'))" 2>/dev/null || true; }
export LD_LIBRARY_PATH="$root/lib:/usr/local/cuda/lib64:$(_pip_lib nvidia.cublas):$(_pip_lib nvidia.cuda_runtime):${LD_LIBRARY_PATH:-}"
export PYTHONPATH="$root:$root/tests:$root/examples"
export GLOG_logtostderr=1 GLOG_minloglevel=1
out="${OUT:-/tmp}"
echo "python: $(python3 --version 2>&1) ($(command -v python3)); bundle: $(tr '\n' ' ' < "$root/BUILT_FOR")"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "nvidia-smi: no GPU visible"
python3 -c "import tandem; print('tandem imported; places:', tandem.available_places())" || exit 1

passed=0; failed=0
for t in "$root"/tests/*_test.py; do
  # It checks `bazel run //python:print_pythonpath`, which the bundle has no use for.
  [[ "$(basename "$t")" == print_pythonpath_test.py ]] && continue
  name="$(basename "$t" .py)"
  if (cd "$root/tests" && python3 -m unittest -v "$name") >> "$out/python_tests.log" 2>&1; then
    passed=$((passed + 1)); echo "$name PASSED"
  else
    failed=$((failed + 1)); echo "$name FAILED"
  fi
done
if ((failed)); then grep -E "^(FAIL|ERROR):|Error" "$out/python_tests.log" | head -40; fi
grep -E "skipped|ok$" "$out/python_tests.log" | grep -i "torch" || true
echo "$passed passed, $failed failed"
((tests_only)) && exit $((failed > 0))

run() {
  echo "== $*" | tee -a "$out/python_examples.log"
  (cd "$root/examples" && python3 "$@") 2>&1 | tee -a "$out/python_examples.log" | grep -vE "^ |^-|^$|^#|^[0-9]"
}
run embedding_offload.py --place=gpu:0 --rows="$rows" --steps=200 --log_every=50 --is_sparse
run embedding_offload.py --place=gpu:0 --rows=1000000 --steps=50 --log_every=10
run embedding_offload.py --place=gpu:0 --rows="$rows" --steps=200 --log_every=50 --is_sparse --no_guard
run crop_profile.py --place=gpu:0 --steps=1000 --advise
run fashion_mnist.py --place=gpu:0
run fashion_mnist.py --place=gpu:0 --first_layer_on_cpu --epochs=3
exit $((failed > 0))
