"""Run by interrupt_test.py: trains until interrupted, then shows the executor still works."""

import sys

import numpy as np

import tandem
from tandem import layers as L

main, startup = tandem.Program(), tandem.Program()
with tandem.program_guard(main, startup):
    x = tandem.data("x", [64, 32])
    h = L.fc(L.fc(x, 64, act="relu"), 1)
    loss = L.mean(L.square_error_cost(h, L.fill_constant([64, 1], "float32", 0.5)))
    tandem.optimizer.SGD(0.01).minimize(loss)

exe = tandem.Executor(tandem.Place(sys.argv[1]))
exe.run(startup)
feed = {"x": np.random.default_rng(0).uniform(size=(64, 32)).astype(np.float32)}
steps = 0
try:
    for steps in range(1, 10_000_000):
        exe.run(main, feed=feed, fetch_list=[loss])
        if steps == 1:
            print("started", flush=True)
except KeyboardInterrupt:
    print("interrupted after %d steps" % steps, flush=True)
value, = exe.run(main, feed=feed, fetch_list=[loss])
print("usable: loss %s" % bool(np.isfinite(value[0])), flush=True)
