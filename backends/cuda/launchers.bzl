"""tandem_cuda_launchers: the build target of one file of CUDA kernels.

Each <name>.cu (nvcc) defines the launchers that <name>.h declares, in plain
CUDA and C++ (no Abseil): the framework-facing kernel classes live in .cc
files that call them.

    tandem_cuda_launchers(name = "pool_launchers")
    tandem_cuda_launchers(name = "broadcast_launchers", shared = ["binary_op"])
"""

load("//third_party/cuda:cuda.bzl", "cuda_library", "if_cuda")

# Device helpers any launcher file may include.
DEVICE_HDRS = [
    "device_float16.h",
    "device_lines.h",
    "device_map.h",
    "device_reduce.h",
]

# Framework headers in plain C++ that any launcher file may include: the
# 16-bit floating types, whose bits the kernels read and write.
FRAMEWORK_HDRS = ["//framework/types:float16.h"]
FRAMEWORK_DEPS = ["//framework/types:float16"]

def tandem_cuda_launchers(name, hdrs = [], shared = [], copts = []):
    """<name>.cu with <name>.h, the device helpers and `hdrs`.

    Args:
      name: the file stem, also the target's name.
      hdrs: more headers of this package that the .cu file includes.
      shared: header-only targets of //backends/common whose header (of the
        same name) the .cu file includes: code the host kernels share, marked
        TANDEM_HOST_DEVICE (host_device.h, given to nvcc with them).
      copts: extra nvcc flags.
    """
    cuda_library(
        name = name,
        srcs = [name + ".cu"],
        hdrs = [name + ".h"] + hdrs + DEVICE_HDRS,
        shared_hdrs = ["//backends/common:%s.h" % s for s in shared] +
                      (["//backends/common:host_device.h"] if shared else []) +
                      FRAMEWORK_HDRS,
        deps = ["//backends/common:%s" % s for s in shared] + FRAMEWORK_DEPS,
        copts = copts,
        target_compatible_with = if_cuda([], ["//backends/cuda:cuda_toolkit_missing"]),
    )
