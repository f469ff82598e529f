"""The Client class and the helpers that build messages from Python values.

Features are a list of floats (dense, exactly the model's dimension), a dict
{index: value} (sparse), a list of (group, name, value) tuples (named
features, for models with hash buckets), or a v1.FeatureVector. Labels are
-1 or +1 for binary models and class names (str) for multiclass ones.

Failed calls raise grpc.RpcError carrying the server's status code and
message; a rejected example in a training stream is not an exception but a
result whose `error.code` is not 0, and the stream goes on.
"""

import itertools
import re
import time

import grpc

from halfspace.std import health_pb2, health_pb2_grpc
from halfspace.std import reflection_pb2, reflection_pb2_grpc
from halfspace.v1 import halfspace_pb2 as pb
from halfspace.v1 import halfspace_pb2_grpc

_ALGORITHMS = tuple(pb.Algorithm.DESCRIPTOR.oneofs_by_name["algorithm"].fields)


def features(x):
    """A v1.FeatureVector from a list, a dict or named tuples (see above)."""
    if isinstance(x, pb.FeatureVector):
        return x
    vector = pb.FeatureVector()
    if isinstance(x, dict):
        vector.sparse.indices.extend(x.keys())
        vector.sparse.values.extend(x.values())
    elif len(x) > 0 and isinstance(x[0], tuple):
        for group, name, value in x:
            vector.named.add(group=group, name=name, value=value)
    else:
        vector.dense.extend(x)
    return vector


def example(x, y, weight=None):
    """A v1.Example: features x, label y (int) or class y (str)."""
    e = pb.Example(features=features(x))
    if isinstance(y, str):
        e.class_label = y
    else:
        e.label = y
    if weight is not None:
        e.weight = weight
    return e


def _batches(examples, batch_size):
    """Lists of up to batch_size v1.Examples, made as `examples` is read."""
    it = iter(examples)
    while True:
        batch = [e if isinstance(e, pb.Example) else example(*e)
                 for e in itertools.islice(it, batch_size)]
        if not batch:
            return
        yield batch


def _requests(message, examples, batch_size, first):
    """Messages of type `message` with up to batch_size examples each; the
    first also sets the fields in the dict `first` (the model's name)."""
    for i, batch in enumerate(_batches(examples, batch_size)):
        yield message(examples=batch, **(first if i == 0 else {}))

# The metadata naming the model a call is about, for a proxy that routes
# each model's calls to one server.
MODEL_HEADER = "halfspace-model"
_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def _pushback(error):
    """The seconds a RESOURCE_EXHAUSTED refusal asks to wait, from its
    grpc-retry-pushback-ms trailer; None for any other error."""
    if error.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
        return None
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-retry-pushback-ms":
            try:
                return max(0, int(value)) / 1000.0
            except ValueError:
                return None
    return None


class Client:
    """A connection to one halfspace server.

    target: "host:port" or "unix:PATH". token: a bearer token for a server
    with --tokens_file. root_certificates: PEM bytes to connect with TLS.
    timeout: seconds each unary call may take.
    """

    def __init__(self, target="localhost:50051", *, token=None,
                 root_certificates=None, timeout=30.0):
        if root_certificates is not None:
            credentials = grpc.ssl_channel_credentials(root_certificates)
            self._channel = grpc.secure_channel(target, credentials)
        else:
            self._channel = grpc.insecure_channel(target)
        self._stub = halfspace_pb2_grpc.HalfspaceServiceStub(self._channel)
        self._metadata = [("authorization", "Bearer " + token)] if token else []
        self._timeout = timeout

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _for(self, name):
        """The metadata of a call about model `name`: the token, and the
        routing header a sharding proxy hashes (see the README), if `name`
        can be a model's name (others are left for the server to refuse)."""
        if not _MODEL_NAME.fullmatch(name):
            return self._metadata
        return self._metadata + [(MODEL_HEADER, name)]

    def _call(self, method, request, attempts=5):
        """One unary call. A refusal by a rate limit (RESOURCE_EXHAUSTED
        with a grpc-retry-pushback-ms trailer) applied nothing: the call is
        sent again after the wait it asks, up to `attempts` times."""
        metadata = self._metadata
        if getattr(request, "model", ""):
            metadata = self._for(request.model)
        for attempt in range(1, attempts + 1):
            try:
                return method(request, timeout=self._timeout,
                              metadata=metadata)
            except grpc.RpcError as error:
                wait = _pushback(error)
                if wait is None or attempt == attempts:
                    raise
                time.sleep(wait)

    # --- Models -------------------------------------------------------------

    def create_model(self, name, dimension, algorithm="perceptron", *,
                     classes=(), hash_bits=0, standardize=False,
                     fit_intercept=True, progress_window=None,
                     window_losses=False, replication=None, **parameters):
        """Creates a model and returns its v1.Model. `algorithm` is a field
        of v1.Algorithm (perceptron, logistic_regression, sgd,
        softmax_regression, ...); `parameters` set that message's fields,
        e.g. learning_rate=0.1. `replication`: a dict of v1.Replication's
        fields (stream, subject, replicas; {} for the defaults) makes a
        replicated model (a server started with --nats_url)."""
        if algorithm not in (f.name for f in _ALGORITHMS):
            raise ValueError("algorithm %r is none of %s" % (
                algorithm, ", ".join(f.name for f in _ALGORITHMS)))
        spec = pb.Algorithm()
        params = getattr(spec, algorithm)
        params.SetInParent()
        for key, value in parameters.items():
            setattr(params, key, value)
        request = pb.CreateModelRequest(
            model=name, algorithm=spec, dimension=dimension,
            hash_bits=hash_bits, standardize=standardize, classes=classes,
            fit_intercept=fit_intercept, window_losses=window_losses)
        if progress_window is not None:
            request.progress_window = progress_window
        if replication is not None:
            request.replication.CopyFrom(pb.Replication(**replication))
        return self._call(self._stub.CreateModel, request).model

    def get_model(self, name):
        return self._call(self._stub.GetModel,
                          pb.GetModelRequest(model=name)).model

    def list_models(self):
        """Every model, in name order, however many pages it takes."""
        models, token = [], ""
        while True:
            page = self._call(self._stub.ListModels,
                              pb.ListModelsRequest(page_token=token))
            models.extend(page.models)
            token = page.next_page_token
            if not token:
                return models

    def delete_model(self, name):
        self._call(self._stub.DeleteModel, pb.DeleteModelRequest(model=name))

    # --- Learning and predicting --------------------------------------------

    def train(self, name, examples, *, batch_size=1000, source=None,
              first_sequence=1):
        """Streams `examples` ((x, y) or (x, y, weight) tuples, or
        v1.Examples) to the model in messages of batch_size, reading them as
        they are sent, and yields one v1.ExampleResult per example, in order.

        With a `source`, examples are numbered from first_sequence and a
        model applies each number once: resending after a failure is safe.

        With a list of names, one stream trains every model in order (a
        fan-out: a champion and its challengers on the same traffic) and
        yields, per example, a list of one v1.ExampleResult per model.
        """
        fan_out = not isinstance(name, str)
        first = {"models": list(name)} if fan_out else {"model": name}
        if source is not None:
            first["source"] = source

        def requests():
            sequence = first_sequence
            for request in _requests(pb.TrainRequest, examples, batch_size,
                                     first):
                if source is not None:
                    request.sequence = sequence
                    sequence += len(request.examples)
                yield request

        for response in self._stub.Train(
                requests(), metadata=self._for(name[0] if fan_out else name)):
            if fan_out:
                yield from (list(r.models) for r in response.fan_out_results)
            else:
                yield from response.results

    def compare(self, models, *, alpha=None):
        """Champion/challenger: one v1.ModelComparison per model of
        `models` (the champion first), each with its progressive accuracy
        and loss (`stats`) and, but the first, McNemar's test against the
        champion on the examples both learned in fan-out streams
        (`versus_first`: the paired counts, p_value, significant)."""
        request = pb.CompareModelsRequest(models=list(models))
        if alpha is not None:
            request.alpha = alpha
        return list(self._call(self._stub.CompareModels, request).models)

    def set_alias(self, alias, model, *, expected=None):
        """Points `alias` at `model` (promotes it) and returns the model it
        pointed to before ("" if none); with `expected`, only if it points
        to that model now ("": only if new). Calls through the alias reach
        one model or the other, never a mix."""
        request = pb.SetAliasRequest(alias=alias, model=model)
        if expected is not None:
            request.expected_model = expected
        return self._call(self._stub.SetAlias, request).previous_model

    def delete_alias(self, alias):
        """Removes `alias`; returns the model it pointed to."""
        return self._stub.DeleteAlias(pb.DeleteAliasRequest(alias=alias),
                                      timeout=self._timeout,
                                      metadata=self._metadata).model

    def aliases(self):
        """Every alias as {alias: model}."""
        response = self._stub.ListAliases(pb.ListAliasesRequest(),
                                          timeout=self._timeout,
                                          metadata=self._metadata)
        return {a.alias: a.model for a in response.aliases}

    def predict(self, name, instances, *, remember=False, example_ids=None,
                top_k=None, min_position=0):
        """One v1.Prediction per feature vector of `instances`. With
        `remember`, the server keeps each for a later `feedback` (delayed
        labels) under the id the prediction's `example_id` names:
        `example_ids`, one per instance, or ids the server makes. A
        multiclass model returns every class's score, or with `top_k` the
        k highest, highest first (0: the predicted class alone). On a
        replicated model, `min_position` (a train response's `position`)
        waits until this server's replica has applied it."""
        request = pb.PredictRequest(
            model=name, instances=[features(x) for x in instances],
            remember=remember, example_ids=list(example_ids or []),
            min_position=min_position)
        if top_k is not None:
            request.top_k = top_k
        return list(self._call(self._stub.Predict, request).predictions)

    def feedback(self, name, labels):
        """Delayed labels: learns `labels`, (example_id, label) or
        (example_id, label, weight) tuples (a multiclass model's label is
        a class name), for examples a remembering `predict` kept, exactly
        as `train` would have then. One v1.ExampleResult per label, in
        order: `duplicate` for an id already learned, an `error` (NOT_FOUND)
        for an unknown or expired one."""
        request = pb.FeedbackRequest(model=name)
        for item in labels:
            f = request.feedback.add(example_id=item[0])
            if isinstance(item[1], str):
                f.class_label = item[1]
            else:
                f.label = item[1]
            if len(item) > 2:
                f.weight = item[2]
        return list(self._call(self._stub.Feedback, request).results)

    def evaluate(self, name, examples, *, batch_size=1000, threshold=None,
                 omit_confusion=False):
        """Scores `examples` without learning; returns a v1.EvaluateResponse
        (accuracy, per-class metrics, confusion matrix unless
        `omit_confusion`, log loss)."""
        first = {"model": name}
        if threshold is not None:
            first["threshold"] = threshold
        if omit_confusion:
            first["omit_confusion"] = True
        return self._stub.Evaluate(
            _requests(pb.EvaluateRequest, examples, batch_size, first),
            timeout=self._timeout, metadata=self._for(name))

    # --- The server ---------------------------------------------------------

    def health(self, service=""):
        """The gRPC health status: "SERVING", "NOT_SERVING", ...; `service`
        "" for the server, "halfspace.v1.HalfspaceService" for the API."""
        stub = health_pb2_grpc.HealthStub(self._channel)
        response = stub.Check(health_pb2.HealthCheckRequest(service=service),
                              timeout=self._timeout)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(
            response.status)

    def services(self):
        """The services the server lists by gRPC reflection."""
        stub = reflection_pb2_grpc.ServerReflectionStub(self._channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        for response in stub.ServerReflectionInfo(iter([request]),
                                                  timeout=self._timeout,
                                                  metadata=self._metadata):
            return sorted(s.name for s in
                          response.list_services_response.service)
        return []
