#!/usr/bin/env bash
# Open MPI for the GPU machine, which has none and no network to install it:
# `pack` (here) puts the files of Debian's Open MPI runtime packages into
# .bundle/openmpi.tar.xz (about 3.5 MB); `install` (there, as root) unpacks
# them at their own paths, so mpirun, orted and the plugins are where
# Debian's build looks for them.
#
#   tools/gpu_openmpi.sh pack
#   # on the GPU machine (device tool: carry [".bundle"]):
#   tools/gpu_openmpi.sh install && mpirun --allow-run-as-root -np 2 /tmp/tandem/bin/... --mpi
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(openmpi-bin openmpi-common libopenmpi3 libpmix2 libhwloc15 libevent-core-2.1-7
          libevent-pthreads-2.1-7)
case "${1:-}" in
  pack)
    mkdir -p .bundle
    files=()
    while read -r f; do
      if [[ -f "$f" || -L "$f" ]]; then files+=("${f#/}"); fi
    done < <(dpkg -L "${packages[@]}")
    tar -C / -cJf .bundle/openmpi.tar.xz "${files[@]}"
    echo "openmpi: $(du -h .bundle/openmpi.tar.xz | cut -f1) in .bundle/openmpi.tar.xz, ${#files[@]} files"
    ;;
  install)
    if command -v mpirun >/dev/null; then echo "openmpi: mpirun is already here"; exit 0; fi
    tar -C / -xJf .bundle/openmpi.tar.xz
    ldconfig 2>/dev/null || true
    mpirun --version | head -1
    ;;
  *)
    sed -n '2,11p' "$0"
    exit 2
    ;;
esac
