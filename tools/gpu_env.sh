# Sourced on the GPU machine: unpacks the bundle made by tools/gpu_bundle.sh
# into /tmp/tandem (once per machine) and sets LD_LIBRARY_PATH so its
# binaries find the packed libraries and the machine's CUDA runtime, cuBLAS
# and NCCL (the toolkit's lib64, else PyTorch's wheel: nvidia/nccl/lib).
#
#   source tools/gpu_env.sh && /tmp/tandem/bin/benchmarks_tandem_benchmark
#
# The bundle's copies of Fashion-MNIST and of the fortunes corpus are linked
# where Debian's packages put them (/usr/share/datasets/fashion-mnist,
# /usr/share/games/fortunes) when the machine lacks them.
_tandem_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
_tandem_bundle="$_tandem_here/tandem.tar.xz"
[[ -f "$_tandem_bundle" ]] || _tandem_bundle="$_tandem_here/../.bundle/tandem.tar.xz"
if [[ ! -f /tmp/tandem/.unpacked || "$_tandem_bundle" -nt /tmp/tandem/.unpacked ]]; then
  rm -rf /tmp/tandem && tar -C /tmp -xJf "$_tandem_bundle" && touch /tmp/tandem/.unpacked
fi
if [[ -d /tmp/tandem/fashion-mnist && ! -e /usr/share/datasets/fashion-mnist ]]; then
  mkdir -p /usr/share/datasets && ln -s /tmp/tandem/fashion-mnist /usr/share/datasets/fashion-mnist
fi
if [[ -d /tmp/tandem/fortunes && ! -e /usr/share/games/fortunes ]]; then
  mkdir -p /usr/share/games && ln -s /tmp/tandem/fortunes /usr/share/games/fortunes
fi
_pip_cublas=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null || true)
_pip_cudart=$(python3 -c 'import nvidia.cuda_runtime, os; print(os.path.join(list(nvidia.cuda_runtime.__path__)[0], "lib"))' 2>/dev/null || true)
_pip_nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH="/tmp/tandem/lib:/usr/local/cuda/lib64:${_pip_cublas}:${_pip_cudart}:${_pip_nccl}:${LD_LIBRARY_PATH:-}"
export GLOG_logtostderr=1
