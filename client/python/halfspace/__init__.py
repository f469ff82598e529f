"""halfspace's Python client: named online linear classifiers over gRPC.

    import halfspace

    with halfspace.Client("localhost:50051") as client:
        client.create_model("notes", 2, halfspace.sgd(loss="log"))
        totals = client.train("notes", [[1, 2], [2, 1]], [1, -1])
        print(totals.examples, totals.updates)
        print(client.predict("notes", [[1, 2]])[0].label)

A failed call raises the halfspace.Error of its status (NotFound,
InvalidArgument, ...). The messages are the generated ones of
proto/halfspace/v1/halfspace.proto, importable as
halfspace.v1.halfspace_pb2.
"""

from halfspace._version import __version__
from halfspace.algorithms import (algorithm, averaged_perceptron,
                                  confidence_weighted, ftrl_proximal,
                                  logistic_regression,
                                  multiclass_perceptron, passive_aggressive,
                                  perceptron, pocket_perceptron, sgd,
                                  softmax_regression, voted_perceptron)
from halfspace.client import (Client, ExactlyOnceTrainer, PredictionArrays,
                              TrainTotals, Weights)
from halfspace.errors import (Aborted, AlreadyExists, Cancelled, DataLoss,
                              DeadlineExceeded, Error, FailedPrecondition,
                              Internal, InvalidArgument, NotFound, OutOfRange,
                              PermissionDenied, ResourceExhausted,
                              Unauthenticated, Unavailable, Unimplemented,
                              Unknown)
from halfspace.messages import example, features

__all__ = [
    "__version__", "Client", "ExactlyOnceTrainer", "PredictionArrays",
    "TrainTotals", "Weights",
    "example", "features",
    "algorithm", "averaged_perceptron", "confidence_weighted",
    "ftrl_proximal", "logistic_regression", "multiclass_perceptron", "passive_aggressive",
    "perceptron", "pocket_perceptron", "sgd", "softmax_regression",
    "voted_perceptron",
    "Error", "Aborted", "AlreadyExists", "Cancelled", "DataLoss",
    "DeadlineExceeded", "FailedPrecondition", "Internal", "InvalidArgument",
    "NotFound", "OutOfRange", "PermissionDenied", "ResourceExhausted",
    "Unauthenticated", "Unavailable", "Unimplemented", "Unknown",
]
