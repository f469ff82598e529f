"""Champion and challenger from Python, end to end.

A perceptron serves click-through predictions behind the alias `ctr`; a
logistic-regression challenger learns the same traffic on one fan-out
stream. A prediction is remembered and learned when its click arrives
(delayed labels); then the two are compared with McNemar's test and the
challenger is promoted if it is significantly better, in one
compare-and-set call.

    PYTHONPATH=client/python python3 client/python/champion_challenger.py [TARGET]

TARGET defaults to $HALFSPACE_SERVER, else localhost:50051.
"""

import math
import os
import sys

import halfspace


def traffic(n):
    """n labeled impressions of a noisy linear rule: (features, click)."""
    for i in range(n):
        x, z = math.sin(i * 1.3), math.cos(i * 0.7)
        noise = 0.9 if i % 7 == 0 else 0.0
        yield [x, z], 1 if x - 0.5 * z + noise > 0 else -1


def main(target):
    with halfspace.Client(target) as client:
        client.create_model("ctr-perceptron", dimension=2)
        client.create_model("ctr-logistic", dimension=2,
                            algorithm=halfspace.logistic_regression(
                                learning_rate=0.1))
        client.set_alias("ctr", "ctr-perceptron")

        # One stream trains both, example by example.
        client.train(["ctr-perceptron", "ctr-logistic"], traffic(2000))

        # Serve through the alias; the click comes later.
        shown = client.predict("ctr", [[0.9, 0.1]], remember=True,
                               example_ids=["impression-1"])
        print(f"shown impression-1: label={shown[0].label:+d} "
              f"score={shown[0].score:.4f}")
        clicked = client.feedback("ctr", [("impression-1", 1)])
        print(f"learned the click: updated={clicked[0].updated} "
              f"margin before={clicked[0].margin:.4f}")

        champion, challenger = client.compare(
            ["ctr-perceptron", "ctr-logistic"])
        test = challenger.versus_first
        for m in (champion, challenger):
            print(f"{m.model}: accuracy={m.stats.progressive_accuracy:.4f} "
                  f"last {m.stats.window_examples}: "
                  f"{m.stats.window_accuracy:.4f}")
        print(f"only the champion wrong: {test.only_first_wrong}, only the "
              f"challenger: {test.only_this_wrong}, p={test.p_value:.3g}")
        if test.significant and test.accuracy_difference > 0:
            previous = client.set_alias("ctr", "ctr-logistic",
                                        expected="ctr-perceptron")
            print(f"promoted ctr-logistic (ctr pointed to {previous})")
        print("ctr serves", client.get_model("ctr").name)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else
         os.environ.get("HALFSPACE_SERVER", "localhost:50051"))
