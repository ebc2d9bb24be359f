"""Detects the CUDA toolkit and exposes it as @local_config_cuda.

Chosen at repository-fetch time:
  * TANDEM_CUDA=0 forces the CPU-only build (no CUDA backend).
  * TANDEM_CUDA=1 requires the toolkit and fails if it is missing.
  * otherwise the toolkit is used when `$CUDA_PATH/bin/nvcc` (default
    /usr/local/cuda) exists.
The generated repository has `defs.bzl` with CUDA_ENABLED and CUDA_PATH, and
targets :cuda_headers, :cudart, :cublas, :nccl (empty when CUDA is disabled).
:nccl links the toolkit's libnccl ($CUDA_PATH/lib64/libnccl.so, rpath there);
a machine whose toolkit lacks it finds the one PyTorch's wheel ships
(site-packages/nvidia/nccl/lib) through LD_LIBRARY_PATH (tools/gpu_env.sh).
"""

def _cuda_configure_impl(ctx):
    force = ctx.os.environ.get("TANDEM_CUDA", "")
    cuda_path = ctx.os.environ.get("CUDA_PATH", "/usr/local/cuda")
    nvcc = ctx.path(cuda_path + "/bin/nvcc")
    found = nvcc.exists and ctx.path(cuda_path + "/include/cuda_runtime.h").exists
    if force == "1" and not found:
        fail("TANDEM_CUDA=1 but no CUDA toolkit at %s (set CUDA_PATH)" % cuda_path)
    enabled = found and force != "0"

    ctx.file("defs.bzl", "CUDA_ENABLED = %s\nCUDA_PATH = %r\n" % (enabled, cuda_path if enabled else ""))
    if enabled:
        ctx.symlink(cuda_path + "/include", "include")
        ctx.symlink(cuda_path + "/bin", "bin")
        ctx.file("BUILD", """
package(default_visibility = ["//visibility:public"])

cc_library(
    name = "cuda_headers",
    hdrs = glob(["include/**/*.h", "include/**/*.hpp", "include/**/*.inl"]),
    includes = ["include"],
)

cc_library(
    name = "cudart",
    linkopts = ["-L{p}/lib64", "-Wl,-rpath,{p}/lib64", "-lcudart"],
    deps = [":cuda_headers"],
)

cc_library(
    name = "cublas",
    linkopts = ["-L{p}/lib64", "-Wl,-rpath,{p}/lib64", "-lcublas", "-lcublasLt"],
    deps = [":cudart"],
)

cc_library(
    name = "nccl",
    linkopts = ["-L{p}/lib64", "-Wl,-rpath,{p}/lib64", "-lnccl"],
    deps = [":cudart"],
)

filegroup(
    name = "nvcc",
    srcs = ["bin/nvcc"],
)
""".format(p = cuda_path))
    else:
        ctx.file("BUILD", """
package(default_visibility = ["//visibility:public"])

cc_library(name = "cuda_headers")
cc_library(name = "cudart")
cc_library(name = "cublas")
cc_library(name = "nccl")
filegroup(name = "nvcc")
""")

cuda_configure = repository_rule(
    implementation = _cuda_configure_impl,
    environ = ["TANDEM_CUDA", "CUDA_PATH"],
    local = True,
)
