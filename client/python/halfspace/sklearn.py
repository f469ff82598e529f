"""A scikit-learn classifier whose model lives on a halfspace server.

    from halfspace.sklearn import HalfspaceClassifier

    clf = HalfspaceClassifier(algorithm="sgd", params={"loss": "log"})
    clf.partial_fit(X1, y1, classes=[0, 1])
    clf.partial_fit(X2, y2)
    clf.predict_proba(X3)

fit creates the model (named `model`, or a fresh name) and learns X, y in
order, `max_iter` passes; partial_fit learns one more batch, as
SGDClassifier's and Perceptron's partial_fit do (classes on the first
call). Labels are any classes scikit-learn accepts: with two classes and a
binary algorithm, classes_[1] is +1 and classes_[0] is -1; with more, a
binary algorithm learns one-vs-rest, as scikit-learn does, and a
multiclass one (multiclass_perceptron, softmax_regression) directly. For
the configurations halfspace matches scikit-learn in (the perceptron,
SGDClassifier's losses and schedules), coef_ and intercept_ after the same
partial_fit calls are scikit-learn's, bit for bit.

predict follows scikit-learn: classes_[1] where the decision function is
> 0, so a score of exactly 0 predicts classes_[0] here, where the server
predicts +1.

The model stays on the server when the estimator is gone (delete_model
removes it); a pickled estimator refers to it by name.
"""

import uuid
from typing import Any, Dict, Optional, Tuple

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (_check_sample_weight, check_is_fitted,
                                      column_or_1d)

from halfspace import algorithms
from halfspace.client import Client
from halfspace.v1 import halfspace_pb2 as pb

try:  # scikit-learn 1.6 and later
    from sklearn.utils.validation import validate_data as _validate_data
except ImportError:
    def _validate_data(estimator, *args, **kwargs):
        return estimator._validate_data(*args, **kwargs)

_MULTICLASS = ("multiclass_perceptron", "softmax_regression")
_PROBABILISTIC = {"logistic_regression", "softmax_regression"}
_PROBABILISTIC_SGD = {pb.Sgd.LOSS_LOG, pb.Sgd.LOSS_MODIFIED_HUBER}

# One client per server and token, shared by every estimator of this
# process: clones (cross-validation makes many) share a channel, and an
# estimator holds no connection of its own to pickle.
_CLIENTS: Dict[Tuple[Optional[str], Optional[str]], Client] = {}


def _client(server: Optional[str], token: Optional[str]) -> Client:
    key = (server, token)
    if key not in _CLIENTS:
        _CLIENTS[key] = Client(server, token=token)
    return _CLIENTS[key]


class HalfspaceClassifier(ClassifierMixin, BaseEstimator):
    """A linear classifier learned online by a halfspace server.

    server: "host:port" or "unix:PATH" (default $HALFSPACE_SERVER, else
    localhost:50051); token: its bearer token. model: the model's name
    (default: a fresh "sklearn-..." name at each fit). algorithm: a
    v1.Algorithm field name ("perceptron", "sgd", ...) with `params` its
    parameters ({"loss": "log", "alpha": 1e-4}), or a v1.Algorithm
    (halfspace.sgd(loss="log")). fit_intercept: learn a bias. max_iter:
    passes over the data in fit (partial_fit makes one). batch_size:
    examples per message.
    """

    def __init__(self, server: Optional[str] = None, model: Optional[str] = None,
                 algorithm: Any = "perceptron",
                 params: Optional[Dict[str, Any]] = None,
                 fit_intercept: bool = True, max_iter: int = 5,
                 batch_size: int = 1000, token: Optional[str] = None):
        self.server = server
        self.model = model
        self.algorithm = algorithm
        self.params = params
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.token = token

    # --- learning -----------------------------------------------------------

    def fit(self, X, y, sample_weight=None):
        """Creates the model afresh (deleting the one an earlier fit made)
        and learns X, y in order, max_iter passes."""
        if not isinstance(self.max_iter, int) or self.max_iter < 1:
            raise ValueError("max_iter must be a whole number >= 1, not %r" %
                             (self.max_iter,))
        X, y = _validate_data(self, X, y, accept_sparse="csr",
                              dtype=np.float64, reset=True)
        check_classification_targets(y)
        classes = np.unique(y)
        if len(classes) < 2:
            raise ValueError("the data has one class, %r: a classifier "
                             "needs 2 classes or more" % (classes[0],))
        if hasattr(self, "model_"):
            self.delete_model()
        self._create(classes, X.shape[1])
        for _ in range(self.max_iter):
            self._learn(X, y, sample_weight)
        self.n_iter_ = self.max_iter
        return self

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Learns one pass over X, y; the first call creates the model and
        needs every class in `classes`."""
        first = not hasattr(self, "model_")
        X, y = _validate_data(self, X, y, accept_sparse="csr",
                              dtype=np.float64, reset=first)
        check_classification_targets(y)
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call "
                                 "to partial_fit")
            classes = np.unique(column_or_1d(classes))
            if len(classes) < 2:
                raise ValueError("classes has one class: a classifier needs "
                                 "2 classes or more")
            self._create(classes, X.shape[1])
        elif classes is not None and not np.array_equal(
                np.unique(column_or_1d(classes)), self.classes_):
            raise ValueError("classes %r is not the first call's %r" % (
                list(classes), list(self.classes_)))
        self._learn(X, y, sample_weight)
        self.n_iter_ = 1
        return self

    def _spec(self) -> pb.Algorithm:
        if isinstance(self.algorithm, pb.Algorithm):
            if self.params:
                raise ValueError("params go into the v1.Algorithm given")
            return self.algorithm
        return algorithms.algorithm(self.algorithm, **(self.params or {}))

    def _create(self, classes, n_features):
        spec = self._spec()
        kind = spec.WhichOneof("algorithm")
        self.classes_ = classes
        self._binary_signs = len(classes) == 2 and kind not in _MULTICLASS
        name = self.model or "sklearn-" + uuid.uuid4().hex[:16]
        names = [] if self._binary_signs else [str(c) for c in classes]
        if len(set(names)) != len(names):
            raise ValueError("classes %r are not distinct as text" %
                             (list(classes),))
        self._connection().create_model(
            name, n_features, spec, classes=names,
            one_vs_rest=bool(names) and kind not in _MULTICLASS,
            fit_intercept=self.fit_intercept)
        self.model_ = name

    def _labels(self, y):
        """y as the server's labels: -1/+1, or class names."""
        index = np.searchsorted(self.classes_, y)
        index[index >= len(self.classes_)] = 0
        unknown = self.classes_[index] != y
        if np.any(unknown):
            raise ValueError("y has classes %r, not among classes_ %r" % (
                sorted(set(np.asarray(y)[unknown].tolist())),
                list(self.classes_)))
        if self._binary_signs:
            return np.where(index == 1, 1, -1)
        return [str(self.classes_[i]) for i in index]

    def _learn(self, X, y, sample_weight):
        labels = self._labels(y)
        weights = None
        if sample_weight is not None:
            weights = _check_sample_weight(sample_weight, X)
        totals = self._connection().train(
            self.model_, X, labels, weights=weights,
            batch_size=self.batch_size)
        if totals.errors:
            index, error = totals.errors[0]
            raise ValueError("the server refused %d examples; the first, "
                             "example %d: %s" % (len(totals.errors), index,
                                                 error.message))

    # --- predicting ---------------------------------------------------------

    def _predictions(self, X):
        check_is_fitted(self, "model_")
        X = _validate_data(self, X, accept_sparse="csr", dtype=np.float64,
                           reset=False)
        client = self._connection()
        out = []
        for start in range(0, X.shape[0], self.batch_size):
            out.extend(client.predict(self.model_,
                                      X[start:start + self.batch_size]))
        return out

    def _class_columns(self, prediction, field):
        """A multiclass prediction's `field` (score, probability) per
        class, in classes_'s order."""
        by_name = {c.label: getattr(c, field) for c in prediction.class_scores}
        return [by_name[str(c)] for c in self.classes_]

    def decision_function(self, X):
        """The scores: f(x) for two classes (> 0: classes_[1]), else one
        column per class."""
        predictions = self._predictions(X)
        if self._binary_signs:
            return np.array([p.score for p in predictions], dtype=np.float64)
        scores = np.array([self._class_columns(p, "score")
                           for p in predictions], dtype=np.float64)
        if len(self.classes_) == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    def predict(self, X):
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def _probabilistic(self):
        spec = self._spec()
        kind = spec.WhichOneof("algorithm")
        return kind in _PROBABILISTIC or (
            kind == "sgd" and spec.sgd.loss in _PROBABILISTIC_SGD)

    @available_if(_probabilistic)
    def predict_proba(self, X):
        """P(class | x), a column per class of classes_, rows summing to
        1 (one-vs-rest's per-class probabilities normalised, as
        scikit-learn does)."""
        predictions = self._predictions(X)
        if self._binary_signs:
            p = np.array([p.probability for p in predictions])
            return np.column_stack([1.0 - p, p])
        proba = np.array([self._class_columns(p, "probability")
                          for p in predictions], dtype=np.float64)
        sums = proba.sum(axis=1, keepdims=True)
        uniform = np.full_like(proba, 1.0 / proba.shape[1])
        return np.where(sums > 0, proba / np.where(sums > 0, sums, 1),
                        uniform)

    @available_if(_probabilistic)
    def predict_log_proba(self, X):
        return np.log(self.predict_proba(X))

    # --- the model's weights --------------------------------------------------

    def _weights(self):
        check_is_fitted(self, "model_")
        w = self._connection().get_weights(self.model_)
        if self._binary_signs:
            return np.array([w.weights]), np.array([w.bias])
        rows = [w.classes[str(c)] for c in self.classes_]
        coef = np.array([r[0] for r in rows])
        intercept = np.array([r[1] for r in rows])
        return coef, intercept

    @property
    def coef_(self):
        """The weights: one row for two classes, one per class for more."""
        return self._weights()[0]

    @property
    def intercept_(self):
        return self._weights()[1]

    def delete_model(self):
        """Deletes the model fit created (it stays on the server
        otherwise)."""
        check_is_fitted(self, "model_")
        self._connection().delete_model(self.model_)
        del self.model_

    def _connection(self) -> Client:
        return _client(self.server, self.token)

    def _more_tags(self):
        return {
            "_xfail_checks": {
                "check_sample_weights_invariance": (
                    "zero sample_weight is not equivalent to removing "
                    "samples: an online learner's step count and order see "
                    "them, as in SGDClassifier"),
            },
        }
