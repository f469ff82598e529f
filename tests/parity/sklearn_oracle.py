"""The scikit-learn side of the parity tests.

Writes two files into OUT_DIR:
  data.csv      one example per line: label (-1/+1), importance weight, x1..xd
                (scikit-learn's breast cancer set, standardized, in file order,
                with four examples of all zeros put in)
  expected.tsv  one configuration per line: name, halfspace's CreateModelRequest
                in protobuf text format, whether the pass is weighted, the
                intercept and the weights scikit-learn reaches after one pass
                over data.csv in order (partial_fit, no shuffling), with %.17g
                digits; then the trained model's accuracy, F1 of class +1 and
                log loss (nan without probabilities) on data.csv.

  iris.csv      the multiclass set: class name, x1..x4 (iris, standardized,
                in a fixed shuffled order)
  multiclass.tsv  one one-vs-rest configuration per line: name, the
                CreateModelRequest (text format), the classes in order, the
                intercepts, the weight rows (";" between classes), and the
                trained model's accuracy and log loss (nan without
                probabilities) on iris.csv.

Usage: /usr/bin/python3 sklearn_oracle.py OUT_DIR
"""

import os
import sys
import warnings

import reference_blas

reference_blas.ensure()

import numpy as np  # noqa: E402 (after the BLAS is chosen)
import scipy.sparse  # noqa: E402
from sklearn.datasets import load_breast_cancer, load_iris  # noqa: E402
from sklearn.metrics import accuracy_score, f1_score, log_loss  # noqa: E402
from sklearn.linear_model import (  # noqa: E402
    PassiveAggressiveClassifier, Perceptron, SGDClassifier)
from sklearn.preprocessing import StandardScaler  # noqa: E402

reference_blas.check()


def sgd(loss, hyper, **kwargs):
    """An SGDClassifier and the matching sgd parameters."""
    extra = "" if kwargs.get("fit_intercept", True) else "fit_intercept: false"
    return SGDClassifier(loss=loss, shuffle=False, **kwargs), (
        "sgd", hyper, extra)


# Configurations scikit-learn trains on a sparse matrix (the same values):
# it then steps the intercept by SPARSE_INTERCEPT_DECAY (0.01).
SPARSE = {"sgd_sparse_input", "pa_i_sparse_input"}


# name -> (estimator, (algorithm, its parameters as text), weighted?)
CONFIGS = {
    "perceptron": (Perceptron(shuffle=False),
                   ("perceptron", ""), False),
    "perceptron_eta_half": (Perceptron(shuffle=False, eta0=0.5),
                            ("perceptron", "learning_rate: 0.5"),
                            False),
    "perceptron_weighted": (Perceptron(shuffle=False),
                            ("perceptron", ""), True),
    "logistic_regression": (
        SGDClassifier(loss="log_loss", penalty="l2", alpha=0.01,
                      learning_rate="constant", eta0=0.1, shuffle=False),
        ("logistic_regression", "learning_rate: 0.1 l2: 0.01"),
        False),
    "averaged_perceptron": (
        SGDClassifier(loss="perceptron", penalty=None,
                      learning_rate="constant", eta0=1.0, average=True,
                      shuffle=False),
        ("averaged_perceptron", ""), False),
    "pa_i": (PassiveAggressiveClassifier(C=0.5, loss="hinge", shuffle=False),
             ("passive_aggressive",
              "variant: VARIANT_PA_I aggressiveness: 0.5"), False),
    "pa_ii": (PassiveAggressiveClassifier(C=0.5, loss="squared_hinge",
                                          shuffle=False),
              ("passive_aggressive",
               "variant: VARIANT_PA_II aggressiveness: 0.5"), False),
    # Without intercept (fit_intercept=False).
    "perceptron_no_intercept": (
        Perceptron(fit_intercept=False, shuffle=False),
        ("perceptron", "", "fit_intercept: false"), False),
    "averaged_perceptron_no_intercept": (
        SGDClassifier(loss="perceptron", penalty=None,
                      learning_rate="constant", eta0=1.0, average=True,
                      fit_intercept=False, shuffle=False),
        ("averaged_perceptron", "", "fit_intercept: false"), False),
    "pa_i_no_intercept": (
        PassiveAggressiveClassifier(C=0.5, fit_intercept=False,
                                    shuffle=False),
        ("passive_aggressive", "variant: VARIANT_PA_I aggressiveness: 0.5",
         "fit_intercept: false"), False),
    # Averaged, from the first example and from the 10th.
    "pa_i_averaged": (
        PassiveAggressiveClassifier(C=0.5, average=True, shuffle=False),
        ("passive_aggressive",
         "variant: VARIANT_PA_I aggressiveness: 0.5 average_from: 1"), False),
    "pa_ii_averaged_from_10": (
        PassiveAggressiveClassifier(C=0.5, loss="squared_hinge", average=10,
                                    shuffle=False),
        ("passive_aggressive",
         "variant: VARIANT_PA_II aggressiveness: 0.5 average_from: 10"),
        False),
    # On a sparse matrix: the intercept decays.
    "pa_i_sparse_input": (
        PassiveAggressiveClassifier(C=0.5, shuffle=False),
        ("passive_aggressive",
         "variant: VARIANT_PA_I aggressiveness: 0.5 intercept_decay: 0.01"),
        False),
}

SGD_CONFIGS = {
    # Each loss with scikit-learn's defaults (L2, alpha 1e-4, optimal).
    "sgd_hinge": ("hinge", "loss: LOSS_HINGE", {}),
    "sgd_squared_hinge": ("squared_hinge", "loss: LOSS_SQUARED_HINGE", {}),
    "sgd_modified_huber": ("modified_huber", "loss: LOSS_MODIFIED_HUBER", {}),
    "sgd_log": ("log_loss", "loss: LOSS_LOG", {}),
    "sgd_perceptron": ("perceptron", "loss: LOSS_PERCEPTRON", {}),
    # Schedules.
    "sgd_constant": ("hinge", "schedule: SCHEDULE_CONSTANT learning_rate: 0.01",
                     dict(learning_rate="constant", eta0=0.01)),
    "sgd_invscaling": ("log_loss",
                       "loss: LOSS_LOG schedule: SCHEDULE_INVERSE_SCALING "
                       "learning_rate: 0.5 power_t: 0.25",
                       dict(learning_rate="invscaling", eta0=0.5,
                            power_t=0.25)),
    # Penalties.
    "sgd_no_penalty": ("hinge", "penalty: PENALTY_NONE",
                       dict(penalty=None)),
    "sgd_l1": ("hinge", "penalty: PENALTY_L1 alpha: 0.001",
               dict(penalty="l1", alpha=0.001)),
    "sgd_elastic_net": ("modified_huber",
                        "loss: LOSS_MODIFIED_HUBER penalty: PENALTY_ELASTIC_NET "
                        "alpha: 0.001 l1_ratio: 0.4",
                        dict(penalty="elasticnet", alpha=0.001, l1_ratio=0.4)),
    # Margins past scikit-learn's cutoffs of the log loss (|z| > 18): large
    # constant steps, and the optimal schedule with a tiny alpha.
    "sgd_log_large_margins": ("log_loss",
                              "loss: LOSS_LOG schedule: SCHEDULE_CONSTANT "
                              "learning_rate: 1 alpha: 1e-06",
                              dict(learning_rate="constant", eta0=1.0,
                                   alpha=1e-6)),
    "sgd_log_small_alpha": ("log_loss", "loss: LOSS_LOG alpha: 1e-07",
                            dict(alpha=1e-7)),
    # Without intercept, and on a sparse matrix.
    "sgd_log_no_intercept": ("log_loss", "loss: LOSS_LOG",
                             dict(fit_intercept=False)),
    "sgd_averaged_no_intercept": ("hinge", "average_from: 1",
                                  dict(average=True, fit_intercept=False)),
    "sgd_sparse_input": ("modified_huber",
                         "loss: LOSS_MODIFIED_HUBER intercept_decay: 0.01",
                         {}),
    # Averaging, from the first example and from the 100th.
    "sgd_averaged": ("hinge", "average_from: 1", dict(average=True)),
    "sgd_averaged_from_100": ("log_loss",
                              "loss: LOSS_LOG schedule: SCHEDULE_CONSTANT "
                              "learning_rate: 0.05 average_from: 100",
                              dict(learning_rate="constant", eta0=0.05,
                                   average=100)),
    "sgd_weighted": ("squared_hinge",
                     "loss: LOSS_SQUARED_HINGE penalty: PENALTY_ELASTIC_NET",
                     dict(penalty="elasticnet")),
}


# name -> (estimator, algorithm, its parameters as text): one-vs-rest on
# iris.
MULTICLASS_CONFIGS = {
    "ovr_perceptron": (Perceptron(shuffle=False), "perceptron", ""),
    "ovr_sgd_hinge": (SGDClassifier(shuffle=False), "sgd", ""),
    "ovr_sgd_log_averaged": (
        SGDClassifier(loss="log_loss", learning_rate="constant", eta0=0.01,
                      average=True, shuffle=False),
        "sgd",
        "loss: LOSS_LOG schedule: SCHEDULE_CONSTANT learning_rate: 0.01 "
        "average_from: 1"),
    "ovr_pa_i": (PassiveAggressiveClassifier(C=0.1, shuffle=False),
                 "passive_aggressive",
                 "variant: VARIANT_PA_I aggressiveness: 0.1"),
}


def write_multiclass(out_dir):
    iris = load_iris()
    order = np.random.RandomState(0).permutation(len(iris.target))
    x = StandardScaler().fit_transform(iris.data)[order]
    y = iris.target_names[iris.target][order]
    with open(os.path.join(out_dir, "iris.csv"), "w") as f:
        for label, row in zip(y, x):
            f.write(",".join([label] + [repr(float(v)) for v in row]) + "\n")
    with open(os.path.join(out_dir, "multiclass.tsv"), "w") as f:
        for name, (estimator, algorithm, hyper) in MULTICLASS_CONFIGS.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                estimator.partial_fit(x, y, classes=np.unique(y))
            classes = [str(c) for c in estimator.classes_]
            request = ("algorithm { %s { %s } } one_vs_rest: true "
                       % (algorithm, hyper) +
                       " ".join('classes: "%s"' % c for c in classes))
            loss = (log_loss(y, estimator.predict_proba(x))
                    if hasattr(estimator, "predict_proba") else float("nan"))
            f.write("\t".join([
                name, request, ",".join(classes),
                ",".join("%.17g" % b for b in estimator.intercept_),
                ";".join(",".join("%.17g" % v for v in row)
                         for row in estimator.coef_),
                "%.17g" % accuracy_score(y, estimator.predict(x)),
                "%.17g" % loss]) + "\n")


def main():
    out_dir = sys.argv[1]
    write_multiclass(out_dir)
    data = load_breast_cancer()
    x = StandardScaler().fit_transform(data.data)
    y = np.where(data.target == 1, 1, -1)
    # Examples whose features are all zero, early (before the averages of
    # average=10 begin), late, and two in a row: scikit-learn's PA-I skips
    # them whole (no step, not averaged, not counted), the others learn
    # their intercepts from them.
    zeros = [3, 200, 200, 401]
    x = np.insert(x, zeros, 0.0, axis=0)
    y = np.insert(y, zeros, [1, -1, 1, -1])
    # Fixed importance weights in [0.25, 2], some zero, for the weighted runs.
    weight = 0.25 + 1.75 * ((np.arange(len(y)) * 37) % 101) / 100.0
    weight[::29] = 0.0

    with open(os.path.join(out_dir, "data.csv"), "w") as f:
        for label, w, row in zip(y, weight, x):
            f.write(",".join([str(int(label)), repr(float(w))] +
                             [repr(float(v)) for v in row]) + "\n")

    configs = dict(CONFIGS)
    for name, (loss, hyper, kwargs) in SGD_CONFIGS.items():
        estimator, spec = sgd(loss, hyper, **kwargs)
        configs[name] = (estimator, spec, name.endswith("weighted"))

    with open(os.path.join(out_dir, "expected.tsv"), "w") as f:
        for name, (estimator, spec, weighted) in configs.items():
            algorithm, hyper, extra = (spec + ("",))[:3]
            fit_args = {"sample_weight": weight} if weighted else {}
            inputs = scipy.sparse.csr_matrix(x) if name in SPARSE else x
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                estimator.partial_fit(inputs, y, classes=np.array([-1, 1]),
                                      **fit_args)
            request = "algorithm { %s { %s } } %s" % (algorithm, hyper, extra)
            # halfspace predicts +1 at f(x) = 0, where scikit-learn predicts
            # -1 (documented): a model without intercept scores an
            # all-zero example exactly 0.
            predicted = np.where(estimator.decision_function(x) >= 0, 1, -1)
            loss = (log_loss(y, estimator.predict_proba(x))
                    if hasattr(estimator, "predict_proba") else float("nan"))
            f.write("\t".join([name, request, "1" if weighted else "0",
                               "%.17g" % estimator.intercept_[0],
                               ",".join("%.17g" % v
                                        for v in estimator.coef_[0]),
                               "%.17g" % accuracy_score(y, predicted),
                               "%.17g" % f1_score(y, predicted),
                               "%.17g" % loss]) + "\n")


if __name__ == "__main__":
    main()
