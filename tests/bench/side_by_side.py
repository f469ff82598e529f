#!/usr/bin/python3
"""The same data through halfspace and scikit-learn, in one invocation.

    /usr/bin/python3 tests/bench/side_by_side.py [--examples=200000]
        [--dimension=20] [--build=build] [--rounds=3]

Makes a noisy linearly separable data set, writes it as CSV, starts the
server binary on a fresh data directory (the default, durable setting), and
times one pass of the perceptron over it:

  - halfspace: `halfspace train MODEL data.csv --summary` (the command-line
    tool reads and parses the text; the server learns and logs every batch);
  - scikit-learn: Perceptron.partial_fit over the whole array in one call,
    and one call per example (what an online pipeline would do), on data
    already in memory as numpy arrays.

Rounds are interleaved and the median of each is printed with its ratio to
halfspace. Both learn the same weights (scikit-learn's Perceptron is the
same algorithm; it predicts -1 at a score of exactly 0, which does not
arise here): the script says whether they agree to the six significant
digits `halfspace weights` prints (the parity tests compare them exactly).
Numbers, not assertions.
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from sklearn.linear_model import Perceptron


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_data(n, d):
    rng = np.random.default_rng(42)
    x = rng.standard_normal((n, d))
    direction = np.array([(j % 3) - 1 for j in range(d)], dtype=float)
    y = np.where(x @ direction + 0.3 * rng.standard_normal(n) >= 0, 1, -1)
    return x, y


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200000)
    parser.add_argument("--dimension", type=int, default=20)
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per_example_limit", type=int, default=20000,
                        help="examples timed one partial_fit call each")
    args = parser.parse_args()

    n, d = args.examples, args.dimension
    x, y = make_data(n, d)
    work = tempfile.mkdtemp(prefix="halfspace-side-")
    csv = os.path.join(work, "data.csv")
    with open(csv, "w") as f:
        for row, label in zip(x, y):
            f.write("%d,%s\n" % (label, ",".join(repr(v) for v in row)))

    port = free_port()
    target = "127.0.0.1:%d" % port
    server = subprocess.Popen(
        [os.path.join(args.build, "halfspace-server"), "--listen=" + target,
         "--data_dir=" + os.path.join(work, "data"), "--log_level=warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cli = [os.path.join(args.build, "halfspace"), "--server=" + target]
    try:
        for _ in range(100):  # until it answers
            if subprocess.run(cli + ["list"], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        times = {"halfspace": [], "whole": [], "each": []}
        difference = 0.0
        for r in range(args.rounds):
            model = "side%d" % r
            subprocess.run(cli + ["create", model, "--dimension=%d" % d],
                           check=True, capture_output=True)
            start = time.perf_counter()
            subprocess.run(cli + ["train", model, csv, "--summary"],
                           check=True, capture_output=True)
            times["halfspace"].append(n / (time.perf_counter() - start))

            whole = Perceptron(shuffle=False, tol=None)
            start = time.perf_counter()
            whole.partial_fit(x, y, classes=[-1, 1])
            times["whole"].append(n / (time.perf_counter() - start))

            each = Perceptron(shuffle=False, tol=None)
            m = min(n, args.per_example_limit)
            start = time.perf_counter()
            each.partial_fit(x[:1], y[:1], classes=[-1, 1])
            for i in range(1, m):
                each.partial_fit(x[i:i + 1], y[i:i + 1])
            times["each"].append(m / (time.perf_counter() - start))

            weights = subprocess.run(cli + ["weights", model], check=True,
                                     capture_output=True, text=True).stdout
            w = np.array([float(v) for v in
                          weights.split("w=")[1].split("\n")[0].split(",")])
            b = float(weights.split("b=")[1])
            ours = np.append(w, b)
            theirs = np.append(whole.coef_[0], whole.intercept_[0])
            difference = max(difference, float(np.max(
                np.abs(ours - theirs) / np.maximum(np.abs(theirs), 1e-300))))
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)

    base = statistics.median(times["halfspace"])
    print("%d examples, d = %d, one pass of the perceptron, medians of %d "
          "rounds\n" % (n, d, args.rounds))
    print("| path | examples/s | vs halfspace |")
    print("|---|---:|---:|")
    for name, label in [
            ("halfspace", "halfspace train, CSV file, durable server"),
            ("whole", "scikit-learn partial_fit, whole array in memory"),
            ("each", "scikit-learn partial_fit, one call per example")]:
        rate = statistics.median(times[name])
        print("| %s | %s | %.2f× |" % (label, format_rate(rate), rate / base))
    print("\nthe two models' weights agree to six significant digits: %s "
          "(largest relative difference %.2g)"
          % ("yes" if difference <= 5e-6 else "NO", difference))


def format_rate(rate):
    return "%.2fM" % (rate / 1e6) if rate >= 1e6 else "%.1fk" % (rate / 1e3)


if __name__ == "__main__":
    sys.exit(main())
