"""Finds the Python the extension is built for and exposes it as @local_config_python.

Chosen at repository-fetch time:
  * TANDEM_PYTHON names the interpreter (a path or a name on PATH); the
    default is Debian's /usr/bin/python3 (python3-dev, python3-numpy), else
    the first python3 on PATH.
  * tools/gpu_python.sh sets it to a Python 3.12 to build the extension for
    the GPU machine.
The generated repository has `defs.bzl` (PYTHON_INTERPRETER, PYTHON_VERSION),
:python_headers (the interpreter's C headers) and :py_toolchain, the
toolchain py_binary and py_test run under (registered in WORKSPACE), so the
tests run on the interpreter the extension was built for.
"""

_PROBE = """
import sys, sysconfig
print(sysconfig.get_paths()["include"])
print("%d.%d" % sys.version_info[:2])
print(sys.executable)
"""

def _python_configure_impl(ctx):
    name = ctx.os.environ.get("TANDEM_PYTHON", "")
    if not name:
        name = "/usr/bin/python3" if ctx.path("/usr/bin/python3").exists else "python3"
    interpreter = ctx.path(name) if name.startswith("/") else ctx.which(name)
    if interpreter == None or not interpreter.exists:
        fail("no Python interpreter '%s' (set TANDEM_PYTHON, or run tools/setup.sh)" % name)
    probe = ctx.execute([interpreter, "-c", _PROBE])
    if probe.return_code != 0:
        fail("cannot ask %s for its headers: %s" % (interpreter, probe.stderr))
    include, version, executable = probe.stdout.strip().split("\n")
    if not ctx.path(include + "/Python.h").exists:
        fail(("%s has no C headers in %s: install python%s-dev (tools/setup.sh) or point " +
              "TANDEM_PYTHON at an interpreter that has them") % (executable, include, version))
    ctx.symlink(include, "include")
    ctx.file("defs.bzl", "PYTHON_INTERPRETER = %r\nPYTHON_VERSION = %r\n" % (executable, version))
    ctx.file("BUILD", """
load("@bazel_tools//tools/python:toolchain.bzl", "py_runtime_pair")

package(default_visibility = ["//visibility:public"])

cc_library(
    name = "python_headers",
    hdrs = glob(["include/**/*.h"]),
    includes = ["include"],
)

py_runtime(
    name = "py3_runtime",
    interpreter_path = "{interpreter}",
    python_version = "PY3",
)

py_runtime_pair(
    name = "runtime_pair",
    py3_runtime = ":py3_runtime",
)

toolchain(
    name = "py_toolchain",
    toolchain = ":runtime_pair",
    toolchain_type = "@bazel_tools//tools/python:toolchain_type",
)
""".format(interpreter = executable))

python_configure = repository_rule(
    implementation = _python_configure_impl,
    environ = ["TANDEM_PYTHON", "PATH"],
    local = True,
)
