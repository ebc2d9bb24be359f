"""//python:print_pythonpath prints a directory from which a plain interpreter,
outside Bazel's runfiles and environment, imports tandem and runs a program."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


class PrintPythonpathTest(unittest.TestCase):
    def test_the_printed_directory_imports_tandem(self):
        binary = os.path.join(os.path.dirname(HERE), "print_pythonpath")
        done = subprocess.run([binary], capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        path = done.stdout.strip()
        self.assertEqual(len(done.stdout.splitlines()), 1, done.stdout)
        self.assertTrue(os.path.isfile(os.path.join(path, "tandem", "_C.so")), path)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("RUNFILES", "PYTHON", "BAZEL", "TEST_"))}
        env["PYTHONPATH"] = path
        program = ("import tandem; m, s = tandem.Program(), tandem.Program()\n"
                   "with tandem.program_guard(m, s):\n"
                   "    y = tandem.layers.fill_constant(shape=[2], value=3.0, dtype='float32')\n"
                   "print(tandem.Executor(tandem.CPUPlace()).run(m, fetch_list=[y])[0].tolist())")
        with tempfile.TemporaryDirectory() as cwd:
            done = subprocess.run([sys.executable, "-c", program], capture_output=True,
                                  text=True, env=env, cwd=cwd, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.strip(), "[3.0, 3.0]")


if __name__ == "__main__":
    unittest.main()
