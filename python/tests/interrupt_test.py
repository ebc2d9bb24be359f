"""Ctrl-C (SIGINT) during a training loop raises KeyboardInterrupt cleanly: between runs, and
inside a long run, which it cancels before its next step with the scope as it was."""

import os
import signal
import subprocess
import sys
import time
import unittest

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "interrupt_child.py")


class InterruptTest(unittest.TestCase):
    def interrupt(self, place, *args):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        child = subprocess.Popen([sys.executable, CHILD, place, *args], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env)
        try:
            self.assertEqual(child.stdout.readline().strip(), "started")
            time.sleep(0.3)  # well into the loop
            child.send_signal(signal.SIGINT)
            out, err = child.communicate(timeout=60)
        finally:
            if child.poll() is None:
                child.kill()
        self.assertEqual(child.returncode, 0, err)
        self.assertIn("usable: loss True", out)
        self.assertNotIn("Traceback", err)
        return out

    def test_cpu(self):
        self.assertRegex(self.interrupt("cpu"), r"interrupted after \d+ steps")

    def test_sim(self):
        self.assertRegex(self.interrupt("sim:0"), r"interrupted after \d+ steps")

    def test_inside_a_long_run_on_cpu(self):
        self.assertRegex(self.interrupt("cpu", "long"),
                         r"interrupted inside run \d+; w unchanged: True")

    def test_inside_a_long_run_on_sim(self):
        self.assertRegex(self.interrupt("sim:0", "long"),
                         r"interrupted inside run \d+; w unchanged: True")


if __name__ == "__main__":
    unittest.main()
