"""Algorithms by keyword: each function returns the v1.Algorithm that
create_model takes, with only the parameters given set (the server applies
the defaults the proto documents for the rest).

    client.create_model("ctr", 20, halfspace.sgd(loss="log", alpha=1e-4))

Enumerations are named by strings, without their prefix and in any case:
loss="log" (or "LOSS_LOG"), penalty="elasticnet", schedule="optimal",
variant="pa_ii". scikit-learn's names for the same losses are accepted too
("log_loss"). A name or a parameter the algorithm does not have is a
ValueError that lists the ones it has.
"""

from typing import Any, Optional

from halfspace.v1 import halfspace_pb2 as pb

ALGORITHMS = tuple(
    f.name for f in pb.Algorithm.DESCRIPTOR.oneofs_by_name["algorithm"].fields)

# scikit-learn's names for losses the proto names otherwise.
_SKLEARN_NAMES = {"log_loss": "log", "elasticnet": "elastic_net",
                  "invscaling": "inverse_scaling"}


def _enum_number(field, value):
    """The number of the enum `field`'s value named `value`."""
    if isinstance(value, int) and not isinstance(value, bool):
        if field.enum_type.values_by_number.get(value) is None:
            raise ValueError("%s has no value %d" % (field.name, value))
        return value
    if not isinstance(value, str):
        raise ValueError("%s is one of %s, not %r" % (
            field.name, _enum_names(field), value))
    prefix = field.enum_type.values[0].name.rsplit("_", 1)[0] + "_"
    name = _SKLEARN_NAMES.get(value.lower(), value).upper()
    for candidate in (name, prefix + name):
        found = field.enum_type.values_by_name.get(candidate)
        if found is not None and not candidate.endswith("_UNSPECIFIED"):
            return found.number
    raise ValueError("%s is one of %s, not %r" % (
        field.name, _enum_names(field), value))


def _enum_names(field):
    prefix = field.enum_type.values[0].name.rsplit("_", 1)[0] + "_"
    return ", ".join(repr(v.name[len(prefix):].lower())
                     for v in field.enum_type.values if v.number != 0)


def algorithm(kind: str, **parameters: Any) -> pb.Algorithm:
    """The v1.Algorithm of `kind` (a field of v1.Algorithm: "perceptron",
    "sgd", ...) with `parameters` set; None leaves a parameter unset."""
    if kind not in ALGORITHMS:
        raise ValueError("algorithm %r is none of %s" % (
            kind, ", ".join(ALGORITHMS)))
    spec = pb.Algorithm()
    message = getattr(spec, kind)
    message.SetInParent()
    fields = message.DESCRIPTOR.fields_by_name
    for key, value in parameters.items():
        if value is None:
            continue
        field = fields.get(key)
        if field is None:
            raise ValueError("%s has no parameter %r; it has %s" % (
                kind, key, ", ".join(sorted(fields)) or "none"))
        if field.enum_type is not None:
            value = _enum_number(field, value)
        try:
            setattr(message, key, value)
        except (TypeError, ValueError) as e:
            raise ValueError("%s.%s: %s" % (kind, key, e)) from None
    return spec


def perceptron(*, learning_rate: Optional[float] = None,
               margin_threshold: Optional[float] = None) -> pb.Algorithm:
    """Rosenblatt's perceptron; with margin_threshold τ > 0 the margin
    perceptron."""
    return algorithm("perceptron", learning_rate=learning_rate,
                     margin_threshold=margin_threshold)


def averaged_perceptron(*, learning_rate: Optional[float] = None,
                        margin_threshold: Optional[float] = None
                        ) -> pb.Algorithm:
    """The averaged perceptron (Freund & Schapire 1999)."""
    return algorithm("averaged_perceptron", learning_rate=learning_rate,
                     margin_threshold=margin_threshold)


def pocket_perceptron(*, learning_rate: Optional[float] = None,
                      ratchet: Optional[bool] = None,
                      predict_with_pocket: Optional[bool] = None
                      ) -> pb.Algorithm:
    """The pocket perceptron (Gallant 1990)."""
    return algorithm("pocket_perceptron", learning_rate=learning_rate,
                     ratchet=ratchet, predict_with_pocket=predict_with_pocket)


def voted_perceptron(*, max_vectors: Optional[int] = None) -> pb.Algorithm:
    """The voted perceptron (Freund & Schapire 1999)."""
    return algorithm("voted_perceptron", max_vectors=max_vectors)


def passive_aggressive(*, variant: Optional[str] = None,
                       aggressiveness: Optional[float] = None,
                       intercept_decay: Optional[float] = None,
                       average_from: Optional[int] = None) -> pb.Algorithm:
    """Passive-aggressive learning (Crammer et al. 2006): variant "pa",
    "pa_i" or "pa_ii"; aggressiveness is C."""
    return algorithm("passive_aggressive", variant=variant,
                     aggressiveness=aggressiveness,
                     intercept_decay=intercept_decay,
                     average_from=average_from)


def logistic_regression(*, learning_rate: Optional[float] = None,
                        l2: Optional[float] = None) -> pb.Algorithm:
    """Logistic regression by stochastic gradient descent."""
    return algorithm("logistic_regression", learning_rate=learning_rate,
                     l2=l2)


def sgd(*, loss: Optional[str] = None, penalty: Optional[str] = None,
        alpha: Optional[float] = None, l1_ratio: Optional[float] = None,
        learning_rate: Optional[float] = None,
        schedule: Optional[str] = None, power_t: Optional[float] = None,
        average_from: Optional[int] = None,
        intercept_decay: Optional[float] = None) -> pb.Algorithm:
    """SGD step for step as scikit-learn's SGDClassifier: loss "hinge",
    "log", "modified_huber", ...; penalty "l2", "l1", "elasticnet",
    "none"; schedule "optimal", "constant", "inverse_scaling", ..."""
    return algorithm("sgd", loss=loss, penalty=penalty, alpha=alpha,
                     l1_ratio=l1_ratio, learning_rate=learning_rate,
                     schedule=schedule, power_t=power_t,
                     average_from=average_from,
                     intercept_decay=intercept_decay)


def multiclass_perceptron(*, learning_rate: Optional[float] = None
                          ) -> pb.Algorithm:
    """The multiclass perceptron: one weight vector per class."""
    return algorithm("multiclass_perceptron", learning_rate=learning_rate)


def softmax_regression(*, learning_rate: Optional[float] = None,
                       l2: Optional[float] = None) -> pb.Algorithm:
    """Multinomial logistic regression by stochastic gradient descent."""
    return algorithm("softmax_regression", learning_rate=learning_rate, l2=l2)


def confidence_weighted(*, variant: Optional[str] = None,
                        phi: Optional[float] = None, r: Optional[float] = None,
                        aggressiveness: Optional[float] = None
                        ) -> pb.Algorithm:
    """Confidence-weighted learning: variant "cw", "arow", "scw_i",
    "scw_ii" or "nherd", with its phi, r or aggressiveness."""
    return algorithm("confidence_weighted", variant=variant, phi=phi, r=r,
                     aggressiveness=aggressiveness)


def ftrl_proximal(*, alpha: Optional[float] = None,
                  beta: Optional[float] = None, l1: Optional[float] = None,
                  l2: Optional[float] = None,
                  regularize_bias: Optional[bool] = None) -> pb.Algorithm:
    """FTRL-Proximal (McMahan et al. 2013): logistic regression with
    per-coordinate learning rates (alpha, beta), L1 and L2."""
    return algorithm("ftrl_proximal", alpha=alpha, beta=beta, l1=l1, l2=l2,
                     regularize_bias=regularize_bias)
