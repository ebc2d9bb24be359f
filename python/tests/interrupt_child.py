"""Run by interrupt_test.py: trains until interrupted, then shows the executor still works.

  interrupt_child.py PLACE          # many short runs: interrupted between or in one
  interrupt_child.py PLACE long     # one run of seconds: interrupted inside it
"""

import sys

import numpy as np

import tandem
from tandem import layers as L

long_run = len(sys.argv) > 2 and sys.argv[2] == "long"
main, startup = tandem.Program(), tandem.Program()
with tandem.program_guard(main, startup):
    if long_run:  # 60 products of 256x256, forward and backward: about a second per run here
        x = tandem.data("x", [256, 256])
        h = x
        w = L.create_parameter([256, 256], "float32", name="w")
        for _ in range(60):
            h = L.tanh(L.matmul(h, w))
        loss = L.mean(h)
    else:
        x = tandem.data("x", [64, 32])
        h = L.fc(L.fc(x, 64, act="relu"), 1)
        loss = L.mean(L.square_error_cost(h, L.fill_constant([64, 1], "float32", 0.5)))
    tandem.optimizer.SGD(0.01).minimize(loss)

exe = tandem.Executor(tandem.Place(sys.argv[1]))
exe.run(startup)
shape = (256, 256) if long_run else (64, 32)
feed = {"x": np.random.default_rng(0).uniform(-0.1, 0.1, size=shape).astype(np.float32)}
steps = 0
if long_run:
    scope = tandem.global_scope()
    in_run = False
    try:
        for steps in range(1, 10_000_000):
            before = np.array(scope.find_var("w").get_tensor())
            if steps == 1:
                print("started", flush=True)
            in_run = True
            exe.run(main, feed=feed, fetch_list=[loss])
            in_run = False
    except KeyboardInterrupt:
        after = np.array(scope.find_var("w").get_tensor())
        print("interrupted %s run %d; w unchanged: %s"
              % ("inside" if in_run else "outside", steps, np.array_equal(before, after)),
              flush=True)
else:
    try:
        for steps in range(1, 10_000_000):
            exe.run(main, feed=feed, fetch_list=[loss])
            if steps == 1:
                print("started", flush=True)
    except KeyboardInterrupt:
        print("interrupted after %d steps" % steps, flush=True)
value, = exe.run(main, feed=feed, fetch_list=[loss])
print("usable: loss %s" % bool(np.isfinite(value[0])), flush=True)
