"""cuda_library: compiles .cu files with nvcc (sm_90) into a linkable library.

The .cu sources must include only CUDA and plain C++ headers (no Abseil):
the framework-facing code lives in .cc files that call launchers declared in
a small header shared with the .cu file.
"""

load("@local_config_cuda//:defs.bzl", "CUDA_ENABLED", "CUDA_PATH")

def cuda_library(name, srcs, hdrs = [], shared_hdrs = [], deps = [], copts = [], **kwargs):
    """Builds `srcs` (.cu) with nvcc; `hdrs` are headers the .cu files include.

    `shared_hdrs` are headers of other packages (exported files) that the .cu
    files include too; list the cc_library that owns each in `deps`.

    Without the toolkit (CUDA_ENABLED false) it declares an empty library and
    no nvcc step, so packages that mention it still load; mark its users
    incompatible (target_compatible_with) or reach them only through if_cuda.
    """
    if not CUDA_ENABLED:
        native.cc_library(name = name, **kwargs)
        return
    objs = []
    for src in srcs:
        obj = name + "_" + src.replace("/", "_").replace(".cu", ".o")
        native.genrule(
            name = name + "_" + src.replace("/", "_").replace(".", "_") + "_nvcc",
            srcs = [src] + hdrs + shared_hdrs,
            outs = [obj],
            cmd = ("%s/bin/nvcc -std=c++17 -O3 --expt-relaxed-constexpr " % CUDA_PATH +
                   "-gencode arch=compute_90,code=sm_90 -Xcompiler -fPIC " +
                   "-I. -I$(GENDIR) " + " ".join(copts) +
                   " -c $(location %s) -o $@" % src),
            local = True,
        )
        objs.append(obj)
    native.cc_library(
        name = name,
        srcs = objs,
        hdrs = hdrs,
        deps = deps + ["@local_config_cuda//:cudart"],
        alwayslink = True,
        **kwargs
    )

def if_cuda(if_true, if_false = []):
    return if_true if CUDA_ENABLED else if_false
