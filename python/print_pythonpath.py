"""Prints the directory to put on PYTHONPATH to `import tandem` outside Bazel:

    export PYTHONPATH=$(bazel run //python:print_pythonpath 2>/dev/null)
    python3 -c "import tandem; print(tandem.available_places())"

It is this binary's runfiles copy of python/ (tandem/*.py and the extension
tandem/_C.so), which `bazel run` (or `bazel build //python:print_pythonpath`)
brings up to date; it stays valid until the next `bazel clean` and follows
every rebuild. Use the interpreter the extension was built for (Debian's
/usr/bin/python3 unless TANDEM_PYTHON said otherwise).
"""

import os
import sys

# sys.path[0] is this script's directory with links resolved: the source tree's
# python/, whose tandem/ has no extension. Import from the runfiles instead.
del sys.path[0]
import tandem  # noqa: E402  (fails here, not in the user's program, if _C.so does not load)

print(os.path.dirname(os.path.dirname(os.path.abspath(tandem.__file__))))
