#!/usr/bin/env bash
# Builds the Python extension (//python) for the GPU machine's Python 3.12 and
# packs it, with the tandem package, the Python tests and examples/python,
# into .bundle/tandem_python.tar.xz (git-ignored; carried like gpu_bundle.sh's).
#
#   tools/gpu_python.sh                        # a Python 3.12 found here (see below)
#   tools/gpu_python.sh --python=/opt/py312/bin/python3.12
#   tools/gpu_python.sh --no-libs              # leave out the shared libraries: the GPU
#                                              # machine takes them from gpu_bundle.sh's bundle
#   # then, on the GPU machine (device tool: carry [".bundle"]):
#   tools/gpu_python_run.sh                    # Python tests + the examples on CUDAPlace(0)
#
# The GPU machine has Python 3.12 (numpy, PyTorch, JAX) but no Bazel and no
# network; this machine's Python is 3.11. An extension works with the minor
# version of the headers it was compiled against, so it is built here
# against a Python 3.12's headers: --python, else $TANDEM_GPU_PYTHON, else
# python3.12 on PATH, else pyenv's (~/.pyenv/versions/3.12.*). pybind11 is
# header-only and the extension does not use numpy's C API, so nothing else
# of that Python is needed. The bundle packs every shared library the
# extension needs except glibc, libstdc++ and CUDA's (the GPU machine's own),
# as gpu_bundle.sh does. Building for 3.12 reconfigures //third_party/python;
# the next plain `bazel build` builds //python for this machine's Python again
# (only python/ recompiles).
set -euo pipefail
cd "$(dirname "$0")/.."

python=""
libs=1
for a in "$@"; do
  case "$a" in
    --python=*) python="${a#--python=}" ;;
    --no-libs) libs=0 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "gpu_python: unknown argument '$a' (--help)" >&2; exit 2 ;;
  esac
done
# The first candidate that runs and is 3.12 (a pyenv shim on PATH may not run).
is_312() { [[ -x "$1" ]] && [[ "$("$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" == 3.12 ]]; }
if [[ -n "$python" ]]; then
  is_312 "$python" || { echo "gpu_python: $python is not a Python 3.12 that runs" >&2; exit 1; }
else
  for c in "${TANDEM_GPU_PYTHON:-}" "$(command -v python3.12 || true)" \
           $(ls -d "$HOME"/.pyenv/versions/3.12.*/bin/python3.12 2>/dev/null | sort -r); do
    if [[ -n "$c" ]] && is_312 "$c"; then python="$c"; break; fi
  done
  [[ -n "$python" ]] || { echo "gpu_python: no Python 3.12 found; pass --python=PATH" >&2; exit 1; }
fi
version=3.12

log="$(mktemp)"
if ! bazel build --repo_env=TANDEM_PYTHON="$python" //python:tandem/_C.so > "$log" 2>&1; then
  cat "$log" >&2; rm -f "$log"; echo "gpu_python: the build failed" >&2; exit 1
fi
rm -f "$log"
so=bazel-bin/python/tandem/_C.so
stage=.bundle/tandem_python
rm -rf "$stage" && mkdir -p "$stage/tandem" "$stage/tests" "$stage/examples" "$stage/lib"
cp python/tandem/*.py "$stage/tandem/"
cp "$so" "$stage/tandem/_C.so" && chmod u+w "$stage/tandem/_C.so"
strip --strip-unneeded "$stage/tandem/_C.so"
cp python/tests/*.py "$stage/tests/"
cp examples/python/*.py "$stage/examples/"
rm -f "$stage/examples/examples_test.py"  # compares against the C++ binaries, not bundled
echo "python $version ($python)" > "$stage/BUILT_FOR"
git rev-parse --short HEAD >> "$stage/BUILT_FOR" 2>/dev/null || true
if ((libs)); then
  skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|librt\.so|libpthread\.so|libstdc\+\+|libgcc_s|libcudart|libcublas|libcuda\.so)'
  ldd "$so" | awk '/=> \// {print $1, $3}' | while read -r soname path; do
    if [[ ! "$soname" =~ $skip ]]; then cp -L "$path" "$stage/lib/$soname"; fi
  done
fi
tar -C .bundle -cJf .bundle/tandem_python.tar.xz tandem_python
rm -rf "$stage"
echo "gpu_python: $(du -h .bundle/tandem_python.tar.xz | cut -f1) in .bundle/tandem_python.tar.xz" \
     "(extension for Python $version$( ((libs)) || echo ', no libraries'))"
