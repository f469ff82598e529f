"""v1 messages from Python values: feature vectors, labels, examples.

Features are a list or a 1-D numpy array of floats (dense, exactly the
model's dimension), a dict {index: value} or a one-row scipy sparse matrix
(sparse), a list of (group, name, value) tuples (named features, for models
with hash buckets), or a v1.FeatureVector. Many at once: any of those in a
list, a 2-D numpy array (a row each) or a scipy sparse matrix (a row each).

Labels are -1 or +1 for binary models (any number equal to one of them:
numpy's 1.0 too) and class names (str) for multiclass ones. Anything else
is a ValueError naming the example and what a label may be, raised before
the example is sent.
"""

import numbers
from typing import Any, Iterable, Iterator, List, Optional, Sequence, Union

from halfspace.v1 import halfspace_pb2 as pb

Label = Union[int, str]


def _is_sparse_matrix(x: Any) -> bool:
    return hasattr(x, "tocsr") and hasattr(x, "shape")


def features(x: Any) -> pb.FeatureVector:
    """A v1.FeatureVector from one example's features (see above)."""
    if isinstance(x, pb.FeatureVector):
        return x
    vector = pb.FeatureVector()
    if isinstance(x, dict):
        vector.sparse.indices.extend(int(i) for i in x.keys())
        vector.sparse.values.extend(float(v) for v in x.values())
    elif _is_sparse_matrix(x):
        row = x.tocsr()
        if row.shape[0] != 1:
            raise ValueError("a sparse matrix of %d rows is many examples' "
                             "features, not one's" % row.shape[0])
        row.sort_indices()
        vector.sparse.indices.extend(row.indices.tolist())
        vector.sparse.values.extend(row.data.tolist())
    elif hasattr(x, "ndim") and hasattr(x, "tolist"):  # a numpy array
        if x.ndim != 1:
            raise ValueError("one example's dense features are 1-D, not of "
                             "shape %s" % (x.shape,))
        vector.dense.extend(x.tolist())
    elif len(x) > 0 and isinstance(x[0], tuple):
        for group, name, value in x:
            vector.named.add(group=group, name=name, value=value)
    else:
        vector.dense.extend(x)
    return vector


def rows(xs: Any) -> Iterator[Any]:
    """One example's features at a time from many (see above)."""
    if _is_sparse_matrix(xs):
        matrix = xs.tocsr()
        matrix.sort_indices()
        for i in range(matrix.shape[0]):
            start, end = matrix.indptr[i], matrix.indptr[i + 1]
            yield dict(zip(matrix.indices[start:end].tolist(),
                           matrix.data[start:end].tolist()))
    elif hasattr(xs, "ndim") and hasattr(xs, "tolist"):  # a numpy array
        if xs.ndim != 2:
            raise ValueError("many examples' features are a 2-D array, one "
                             "row each, not of shape %s" % (xs.shape,))
        yield from xs.tolist()
    else:
        yield from xs


def label(y: Any, where: str = "the example") -> Label:
    """`y` as a v1 label: -1 or +1, or a class name."""
    if isinstance(y, str):
        if not y:
            raise ValueError("%s's class name is empty" % where)
        return y
    if isinstance(y, numbers.Number) and not isinstance(y, bool) and \
            y in (-1, 1):
        return int(y)
    raise ValueError("%s's label is %r: a binary model's labels are -1 and "
                     "+1 (numbers), a multiclass model's are class names "
                     "(str)" % (where, y))


def example(x: Any, y: Any, weight: Optional[float] = None,
            where: str = "the example") -> pb.Example:
    """A v1.Example: features x, label y (-1/+1) or class y (str)."""
    e = pb.Example(features=features(x))
    y = label(y, where)
    if isinstance(y, str):
        e.class_label = y
    else:
        e.label = y
    if weight is not None:
        e.weight = float(weight)
    return e


def examples(xs: Any, ys: Optional[Iterable[Any]] = None,
             weights: Optional[Iterable[float]] = None
             ) -> Iterator[pb.Example]:
    """v1.Examples, made as they are read: from features `xs` and labels
    `ys` side by side (scikit-learn's X, y), with `weights` if given; or,
    without `ys`, from `xs` as (x, y) or (x, y, weight) tuples or
    v1.Examples."""
    if ys is None:
        if weights is not None:
            raise ValueError("weights go with X and y; with (x, y) tuples, "
                             "give (x, y, weight)")
        for i, item in enumerate(xs):
            if isinstance(item, pb.Example):
                yield item
            else:
                yield example(*item, where="example %d" % i)
        return
    labels = list(_flat(ys))
    weight_list = None if weights is None else list(_flat(weights))
    count = 0
    for i, x in enumerate(rows(xs)):
        if i >= len(labels):
            raise ValueError("X has more rows than y has labels (%d)" %
                             len(labels))
        weight = None if weight_list is None else weight_list[i]
        yield example(x, labels[i], weight, where="example %d" % i)
        count += 1
    if count != len(labels):
        raise ValueError("X has %d rows and y %d labels" %
                         (count, len(labels)))
    if weight_list is not None and len(weight_list) != count:
        raise ValueError("X has %d rows and weights %d values" %
                         (count, len(weight_list)))


def _flat(values: Any) -> Sequence[Any]:
    """A 1-D sequence's items (a numpy array's as Python values)."""
    if hasattr(values, "ndim") and hasattr(values, "tolist"):
        if values.ndim != 1:
            raise ValueError("labels and weights are 1-D, not of shape %s" %
                             (values.shape,))
        return values.tolist()
    return list(values)


def feature_vectors(xs: Any) -> List[pb.FeatureVector]:
    """v1.FeatureVectors from many examples' features."""
    return [features(x) for x in rows(xs)]
