#!/usr/bin/env bash
# Installs what building and testing Tandem needs, if missing (Debian 12).
#
#   tools/setup.sh            # install missing packages, then exit
#   tools/setup.sh --check    # only report what is missing (exit 1 if any)
#
# The CUDA toolkit is not installed here: when /usr/local/cuda (or $CUDA_PATH)
# has nvcc the CUDA backend is built, otherwise the build is CPU + sim only.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap       # Bazel 4.2.3, works offline with the shims in third_party/
  g++
  libabsl-dev
  libgoogle-glog-dev
  libgflags-dev
  libgtest-dev
  libgmock-dev
  libbenchmark-dev
  libdnnl-dev           # oneDNN 2.6, CPU matmul
  zlib1g-dev            # gzip-compressed IDX files (//data), checkpoint CRC-32
  nlohmann-json3-dev    # JSON parser and writer behind framework/base/json.h (header-only)
  dataset-fashion-mnist # Fashion-MNIST in /usr/share/datasets/fashion-mnist (//data tests, examples)
  fortunes              # English text in /usr/share/games/fortunes: the GPT example's corpus
  python3-dev           # the Python headers //python (import tandem) is built against
  python3-numpy         # numpy, which the Python tests and examples use
  pybind11-dev          # pybind11 2.10 (header-only), the binding library of //python
  libdlpack-dev         # dlpack.h, the tensor exchange format of __dlpack__ / from_dlpack
  libopenmpi-dev        # Open MPI 4.1: one process per GPU under mpirun (distributed/mpi)
  openmpi-bin           # mpirun, which launches those jobs and the multi-process tests
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ "${1:-}" == "--check" ]]; then
  if ((${#missing[@]})); then echo "missing: ${missing[*]}"; exit 1; fi
  echo "all build dependencies are installed"
  exit 0
fi

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if command -v nvcc >/dev/null 2>&1 || [[ -x "${CUDA_PATH:-/usr/local/cuda}/bin/nvcc" ]]; then
  echo "setup: CUDA toolkit found: the gpu backend will be built (TANDEM_CUDA=0 to skip)"
else
  echo "setup: no CUDA toolkit: building the cpu and sim backends only"
fi
