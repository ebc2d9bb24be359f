"""Tests of tools/concurrency_summary.py: figures of several rounds become
their median with the spread, ratios come from the medians, a failed round
is counted, and single-round folders (no .rN suffix) still read."""
import contextlib
import io
import json
import os
import tempfile
import unittest
from unittest import mock

import concurrency_summary as cs


def write(d, name, text):
    with open(os.path.join(d, name), "w") as f:
        f.write(text)


def ctr(rate):
    return f"step   3000  loss 0.5000  {rate} examples/s  ETA 0:00:00\nexit status 0\n"


def fmnist(seconds):
    return f"epoch 2/2  done  test accuracy 0.85  (train {seconds} s, test 0.1 s)\nexit status 0\n"


def bench(rows):
    return json.dumps({"benchmarks": [
        {"run_name": name + "/real_time", "aggregate_name": "median", "real_time": us,
         "time_unit": "us"} for name, us in rows.items()]})


class RoundsTest(unittest.TestCase):
    def test_rounds_give_medians_spreads_and_ratios(self):
        with tempfile.TemporaryDirectory() as d:
            for r, (c, i) in enumerate([(1000, 900), (1200, 1000), (1100, 1100)], start=1):
                write(d, f"ctr_all_concurrent.r{r}.txt", ctr(c))
                write(d, f"ctr_all_in_order.r{r}.txt", ctr(i))
                write(d, f"ctr_mixed_concurrent.r{r}.txt", ctr(c // 2))
                write(d, f"ctr_mixed_in_order.r{r}.txt", ctr(i // 2))
            text, practical = cs.ctr_section(d, "gpu")
            self.assertIn("1100 (1000-1200)", text)  # concurrent: median and spread
            self.assertIn("1000 (900-1100)", text)   # in order
            self.assertIn("1.1", text)               # 1100 / 1000
            self.assertAlmostEqual(practical["concurrent"], 550 / 1100)

    def test_a_failed_round_is_counted_and_left_out(self):
        with tempfile.TemporaryDirectory() as d:
            for m in ("concurrent", "in_order"):
                write(d, f"fmnist_all_{m}.r1.txt", fmnist(0.8))
                write(d, f"fmnist_all_{m}.r2.txt", "killed\nexit status 124\n")
                write(d, f"fmnist_mixed_{m}.r1.txt", fmnist(1.6))
                write(d, f"fmnist_mixed_{m}.r2.txt", fmnist(2.0))
            text, practical = cs.fmnist_section(d, "gpu")
            self.assertIn("0.8 1 FAILED", text)
            self.assertIn("1.8 (1.6-2)", text)
            self.assertAlmostEqual(practical["in_order"], 0.8 / 1.8)

    def test_benchmark_rows_take_the_median_round_and_a_speed_up(self):
        with tempfile.TemporaryDirectory() as d:
            rounds = {"concurrent": [100, 90, 95], "in_order": [120, 110, 130]}
            for m, values in rounds.items():
                for r, us in enumerate(values, start=1):
                    write(d, f"bench_workload1_{m}.r{r}.json",
                          bench({"workload1/b4096/all_gpu": us,
                                 "workload1/b4096/table_cpu_rest_gpu": 4 * us}))
            text, practical = cs.bench_section(d, "gpu")
            line = next(l for l in text.splitlines() if "workload1/b4096/all_gpu " in l)
            self.assertIn("95 (90-100)", line)
            self.assertIn("120 (110-130)", line)
            self.assertTrue(line.rstrip().endswith("1.26"), line)  # 120 / 95
            self.assertAlmostEqual(practical["concurrent"], 0.25)

    def test_a_single_round_folder_still_reads(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "ctr_all_concurrent.txt", ctr(1000))
            write(d, "ctr_all_in_order.txt", ctr(800))
            text, _ = cs.ctr_section(d, "gpu")
            self.assertIn("1000", text)
            self.assertNotIn("(1000-1000)", text)  # no spread for one round
            self.assertIn("1.25", text)


class TrialTest(unittest.TestCase):
    def test_the_trials_choices_are_listed_by_run(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "ctr_mixed_concurrent.r2.txt",
                  "I20261206 executor.cc:333] executor: a plan of 44 steps runs in order: "
                  "0.614 vs 0.678 ms per run concurrently (medians of 3 phases of 16 runs each)\n")
            write(d, "ctr_mixed_in_order.r2.txt", "executor: a plan of 44 steps runs in order: "
                  "1.0 vs 2.0 ms per run concurrently\n")  # in-order runs have no trial
            text = cs.trial_section(d)
            self.assertIn("ctr_mixed.r2  44 steps  in order  0.614 vs 0.678 ms", text)
            self.assertNotIn("1.0 vs 2.0", text)

    def test_the_figures_end_the_output(self):
        # A caller that keeps only the output's tail (the device tool) must
        # get the tables, not the trial's long log.
        with tempfile.TemporaryDirectory() as d:
            write(d, "ctr_all_concurrent.txt", ctr(1000))
            write(d, "ctr_mixed_concurrent.txt",
                  ctr(800) + "executor: a plan of 44 steps runs in order: "
                  "0.614 vs 0.678 ms per run concurrently\n")
            out = io.StringIO()
            with contextlib.redirect_stdout(out), mock.patch("sys.argv", ["cs", "--dir", d]):
                cs.main()
            text = out.getvalue()
            self.assertLess(text.index("(e) schedule trial"), text.index("(d) practicality"))
            self.assertLess(text.index("(e) schedule trial"), text.index("examples/s"))
            self.assertIn("0.8", text[text.index("(d) practicality"):])  # 800 / 1000


if __name__ == "__main__":
    unittest.main()
