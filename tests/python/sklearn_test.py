"""halfspace.sklearn.HalfspaceClassifier against a real server: scikit-learn's
own estimator checks, and coefficients equal to SGDClassifier's and
Perceptron's, bit for bit, after the same partial_fit calls.

Run by ctest with PYTHONPATH=client/python and HALFSPACE_SERVER_BINARY set;
scikit-learn runs on the reference BLAS (tests/parity/reference_blas.py).
"""

import os
import pathlib
import sys
import unittest
import warnings

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent /
                       "parity"))
import reference_blas  # noqa: E402

reference_blas.ensure()

import numpy as np  # noqa: E402
import scipy.sparse  # noqa: E402
from sklearn.linear_model import Perceptron, SGDClassifier  # noqa: E402
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402

import halfspace  # noqa: E402
from halfspace.sklearn import HalfspaceClassifier  # noqa: E402
from server_process import ServerProcess  # noqa: E402

reference_blas.check()

# What may skip a check, and why; every other check of scikit-learn's
# check_estimator must pass.
SKIP_REASONS = (
    # Declared in the estimator's tags, as SGDClassifier declares it: zero
    # weights are not removed samples for an online learner.
    "Skipping check_sample_weights_invariance",
    # Those checks' pandas inputs (their numpy inputs are checked).
    "pandas is not installed",
)


class SklearnTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess("--durability=write", "--log_level=warn")
        os.environ["HALFSPACE_SERVER"] = cls.server.target

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def run_checks(self, estimator):
        """Runs scikit-learn's checks of `estimator`; returns the names of
        those that passed whole."""
        passed, failed = [], []
        for est, check in check_estimator(estimator, generate_only=True):
            name = getattr(check, "func", check).__name__
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    check(est)
                except unittest.SkipTest as e:
                    if not any(r in str(e) for r in SKIP_REASONS):
                        failed.append("%s: skipped: %s" % (name, e))
                    continue
                except Exception as e:  # noqa: BLE001 (reported below)
                    failed.append("%s: %s: %s" % (name, type(e).__name__, e))
                    continue
            passed.append(name)
        self.assertEqual(failed, [])
        self.assertGreater(len(passed), 40)
        return passed

    def test_scikit_learns_checks_pass_for_a_binary_algorithm(self):
        ran = self.run_checks(HalfspaceClassifier())
        for check in ("check_classifiers_train", "check_fit_idempotent",
                      "check_estimators_pickle", "check_classifiers_classes",
                      "check_estimator_sparse_data"):
            self.assertIn(check, ran)

    def test_scikit_learns_checks_pass_for_a_probabilistic_one(self):
        ran = self.run_checks(HalfspaceClassifier(
            algorithm="sgd", params={"loss": "log", "alpha": 1e-3}))
        self.assertIn("check_decision_proba_consistency", ran)

    def test_scikit_learns_checks_pass_for_ftrl_proximal(self):
        ran = self.run_checks(HalfspaceClassifier(
            algorithm="ftrl_proximal", params={"alpha": 0.5, "l1": 0.01}))
        self.assertIn("check_decision_proba_consistency", ran)

    def test_scikit_learns_checks_pass_for_a_multiclass_one(self):
        self.run_checks(HalfspaceClassifier(algorithm="softmax_regression"))

    def partial_fits(self, ours, theirs, X, y, chunks=4, exact=True):
        classes = np.unique(y)
        for part in np.array_split(np.arange(len(y)), chunks):
            ours.partial_fit(X[part], y[part], classes=classes)
            theirs.partial_fit(X[part], y[part], classes=classes)
        if not exact:
            np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-9)
            np.testing.assert_allclose(ours.intercept_, theirs.intercept_,
                                       rtol=1e-9)
            return
        # Bit for bit: compared as they are, not within a tolerance.
        np.testing.assert_array_equal(ours.coef_, theirs.coef_)
        np.testing.assert_array_equal(ours.intercept_, theirs.intercept_)
        np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
        np.testing.assert_array_equal(ours.decision_function(X),
                                      theirs.decision_function(X))

    def data(self, classes, n=400, d=6, seed=0):
        rng = np.random.RandomState(seed)
        X = rng.normal(size=(n, d))
        w = rng.normal(size=(classes, d))
        y = np.argmax(X @ w.T + 0.5 * rng.normal(size=(n, classes)), axis=1)
        return X, np.array(["ham", "spam", "eggs", "bacon"])[y] if \
            classes <= 4 else y

    def test_perceptron_coefficients_are_scikit_learns(self):
        for classes in (2, 3):
            X, y = self.data(classes, seed=classes)
            self.partial_fits(HalfspaceClassifier(algorithm="perceptron"),
                              Perceptron(shuffle=False), X, y)

    def test_sgd_coefficients_are_scikit_learns(self):
        for loss, params in (("hinge", {}), ("log_loss", {}),
                             ("modified_huber", {"average": False})):
            for classes in (2, 3):
                X, y = self.data(classes, seed=7 + classes)
                ours = HalfspaceClassifier(
                    algorithm=halfspace.sgd(loss=loss, alpha=1e-3))
                theirs = SGDClassifier(loss=loss, alpha=1e-3, shuffle=False,
                                       **params)
                with self.subTest(loss=loss, classes=classes):
                    self.partial_fits(ours, theirs, X, y, chunks=1)
                # scikit-learn folds its weights' scale (w = wscale·v) into
                # v at the end of every partial_fit call, where halfspace
                # folds it when it falls below 1e-9: across several calls
                # the two round differently, in the last bits.
                ours = HalfspaceClassifier(
                    algorithm=halfspace.sgd(loss=loss, alpha=1e-3))
                theirs = SGDClassifier(loss=loss, alpha=1e-3, shuffle=False,
                                       **params)
                with self.subTest(loss=loss, classes=classes, chunks=4):
                    self.partial_fits(ours, theirs, X, y, exact=False)

    def test_sparse_input_learns_as_dense(self):
        X, y = self.data(2, seed=3)
        X[np.abs(X) < 0.8] = 0.0
        dense = HalfspaceClassifier().fit(X, y)
        sparse = HalfspaceClassifier().fit(scipy.sparse.csr_matrix(X), y)
        np.testing.assert_array_equal(dense.coef_, sparse.coef_)
        self.assertNotEqual(dense.model_, sparse.model_)

    def test_a_named_model_is_the_servers_model(self):
        X, y = self.data(2, seed=4)
        clf = HalfspaceClassifier(model="sk-named").fit(X, y)
        client = halfspace.Client()
        weights = client.get_weights("sk-named")
        np.testing.assert_array_equal(clf.coef_, [weights.weights])
        with self.assertRaises(halfspace.AlreadyExists):
            HalfspaceClassifier(model="sk-named").fit(X, y)
        clf.delete_model()
        with self.assertRaises(halfspace.NotFound):
            client.get_model("sk-named")


if __name__ == "__main__":
    unittest.main()
