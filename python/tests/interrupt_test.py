"""Ctrl-C (SIGINT) during a training loop raises KeyboardInterrupt between runs, cleanly."""

import os
import signal
import subprocess
import sys
import time
import unittest

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "interrupt_child.py")


class InterruptTest(unittest.TestCase):
    def interrupt(self, place):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        child = subprocess.Popen([sys.executable, CHILD, place], stdout=subprocess.PIPE,
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
        self.assertRegex(out, r"interrupted after \d+ steps")
        self.assertIn("usable: loss True", out)
        self.assertNotIn("Traceback", err)

    def test_cpu(self):
        self.interrupt("cpu")

    def test_sim(self):
        self.interrupt("sim:0")


if __name__ == "__main__":
    unittest.main()
