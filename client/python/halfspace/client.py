"""The Client: a method for every call of halfspace.v1.HalfspaceService.

Features, labels and examples are Python values, numpy arrays or scipy
sparse matrices (see halfspace.messages); algorithms are names with
keyword parameters, or halfspace.sgd(...) and its kin (see
halfspace.algorithms). A failed call raises the halfspace.Error of its
status (NotFound, InvalidArgument, ...) with the server's message; an
example the server refuses in a training stream is not an exception but a
result whose `error.code` is not 0, and the stream goes on.

Read-only calls are retried while the server is unavailable (a restart), a
rate limit's refusal is retried after the wait it asks for, and
`exactly_once` trains from a producer exactly once across lost
connections, as the C++ client's ExactlyOnceTrainer does.
"""

import dataclasses
import os
import random
import re
import threading
import time
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Optional,
                    Sequence, Tuple, Union)

import grpc
from google.protobuf import json_format

from halfspace import algorithms, errors, messages
from halfspace.errors import Error
from halfspace.std import health_pb2, health_pb2_grpc
from halfspace.std import reflection_pb2, reflection_pb2_grpc
from halfspace.v1 import halfspace_pb2 as pb
from halfspace.v1 import halfspace_pb2_grpc

# The metadata naming the model a call is about, for a proxy that routes
# each model's calls to one server.
MODEL_HEADER = "halfspace-model"
_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")

# Statuses after which a Train stream is sent again by the exactly-once
# trainer: the server applied each example once or not at all.
_RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED,
              grpc.StatusCode.ABORTED, grpc.StatusCode.DEADLINE_EXCEEDED)


def _pushback(error: grpc.RpcError) -> Optional[float]:
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


def _backoff(attempt: int, initial: float = 0.02, cap: float = 1.0) -> float:
    """The pause before attempt `attempt` (2, 3, ...): exponential, with
    jitter from [b/2, b] so that clients a restart disconnected together do
    not come back together."""
    b = min(initial * 2 ** max(0, attempt - 2), cap)
    return b * random.uniform(0.5, 1.0)


@dataclasses.dataclass
class TrainTotals:
    """What a train call taught one model: the server's summaries of its
    requests, added up.

    examples: learned from (neither refused nor duplicates); updates and
    mistakes among them; loss_sum, their losses before each update;
    duplicates: answered as already applied (exactly-once training);
    errors: (index of the example in the call, halfspace.Error) for each
    example refused; position: a replicated model's position after the
    call (Predict's min_position), else 0.
    """

    examples: int = 0
    updates: int = 0
    mistakes: int = 0
    loss_sum: float = 0.0
    duplicates: int = 0
    errors: List[Tuple[int, Error]] = dataclasses.field(
        default_factory=list)
    position: int = 0

    @property
    def accuracy(self) -> float:
        """The progressive accuracy: examples predicted right before they
        were learned, as a fraction of those learned (nan for none)."""
        if self.examples == 0:
            return float("nan")
        return 1.0 - self.mistakes / self.examples

    def add(self, summary: pb.TrainSummary, first_index: int,
            position: int) -> None:
        self.examples += summary.examples
        self.updates += summary.updates
        self.mistakes += summary.mistakes
        self.loss_sum += summary.loss_sum
        self.duplicates += summary.duplicates
        for e in summary.errors:
            self.errors.append((first_index + e.index,
                                errors.from_status(e.error)))
        self.position = max(self.position, position)


@dataclasses.dataclass
class Weights:
    """A model's weights, read whole at one version: `weights` and `bias`
    for a binary model; `classes`, {class: (weights, bias)}, for a
    multiclass one."""

    weights: List[float]
    bias: float
    classes: Dict[str, Tuple[List[float], float]]
    version: int


@dataclasses.dataclass
class PredictionArrays:
    """predict_arrays' answer, numpy arrays of a row per instance.

    labels: int32 -1 or +1, or for a multiclass model the predicted classes
    (str); scores: float64 f(x), or [N, k] for a multiclass model, a column
    per class of `classes`; probabilities: float64 shaped as scores, or
    None for a model that gives none; classes: a multiclass model's
    classes in the columns' order, else None.
    """

    labels: Any
    scores: Any
    probabilities: Any
    classes: Optional[List[str]]


def _numpy():
    try:
        import numpy  # pylint: disable=import-outside-toplevel
    except ImportError:
        raise ImportError("predict_arrays answers numpy arrays: "
                          "pip install numpy") from None
    return numpy


class _Requests:
    """The request iterator of a client stream: keeps what the caller's
    iterator raised, which gRPC would turn into an opaque UNKNOWN, to raise
    it in its place."""

    def __init__(self, requests: Iterable[Any]):
        self._requests = iter(requests)
        self.raised: Optional[BaseException] = None

    def __iter__(self):
        return self

    def __next__(self):
        try:
            return next(self._requests)
        except StopIteration:
            raise
        except BaseException as e:  # noqa: B902 (raised again by _reraise)
            self.raised = e
            raise

    def error(self, error: grpc.RpcError) -> BaseException:
        """What to raise for `error`, the stream's failure."""
        return self.raised if self.raised is not None else \
            errors.from_rpc_error(error)


def _batches(items: Iterable[Any], size: int) -> Iterator[List[Any]]:
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class Client:
    """A connection to one halfspace server.

    target: "host:port" or "unix:PATH"; by default $HALFSPACE_SERVER if
    set, else localhost:50051, as the command-line tool.
    token: a bearer token for a server
    with --tokens_file. root_certificates: PEM bytes to connect with TLS.
    timeout: seconds each unary call may take, retries included.
    attempts: how many times a read-only call is sent while the server is
    unavailable.
    """

    def __init__(self, target: Optional[str] = None, *,
                 token: Optional[str] = None,
                 root_certificates: Optional[bytes] = None,
                 timeout: float = 30.0, attempts: int = 5):
        if target is None:
            target = os.environ.get("HALFSPACE_SERVER") or "localhost:50051"
        if root_certificates is not None:
            credentials = grpc.ssl_channel_credentials(root_certificates)
            self._channel = grpc.secure_channel(target, credentials)
        else:
            self._channel = grpc.insecure_channel(target)
        self._stub = halfspace_pb2_grpc.HalfspaceServiceStub(self._channel)
        self._metadata = [("authorization", "Bearer " + token)] if token else []
        self._timeout = timeout
        self._attempts = max(1, attempts)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _for(self, name: str) -> List[Tuple[str, str]]:
        """The metadata of a call about model `name`: the token, and the
        routing header a sharding proxy hashes (see the README), if `name`
        can be a model's name (others are left for the server to refuse)."""
        if not _MODEL_NAME.fullmatch(name):
            return self._metadata
        return self._metadata + [(MODEL_HEADER, name)]

    def _call(self, method: Callable, request: Any, *,
              read_only: bool = False) -> Any:
        """One unary call, within the client's timeout. A rate limit's
        refusal (RESOURCE_EXHAUSTED with a grpc-retry-pushback-ms trailer)
        applied nothing: the call is sent again after the wait it asks. A
        read-only call is also sent again, after a backoff, while the server
        is UNAVAILABLE."""
        metadata = self._metadata
        if getattr(request, "model", ""):
            metadata = self._for(request.model)
        deadline = time.monotonic() + self._timeout
        for attempt in range(1, self._attempts + 1):
            try:
                return method(request, metadata=metadata,
                              timeout=max(0.0, deadline - time.monotonic()))
            except grpc.RpcError as error:
                wait = _pushback(error)
                if wait is None and read_only and \
                        error.code() == grpc.StatusCode.UNAVAILABLE:
                    wait = _backoff(attempt + 1)
                if wait is None or attempt == self._attempts or \
                        time.monotonic() + wait >= deadline:
                    raise errors.from_rpc_error(error) from None
                time.sleep(wait)
        raise AssertionError("unreachable")

    def _stream(self, method: Callable, requests: Iterable[Any],
                metadata: Sequence[Tuple[str, str]], *,
                timeout: Optional[float] = None) -> Iterator[Any]:
        """The responses of a bidirectional stream, with its failure (or
        what the request iterator raised) raised as it happens."""
        guarded = _Requests(requests)
        try:
            yield from method(guarded, metadata=metadata, timeout=timeout)
        except grpc.RpcError as error:
            raise guarded.error(error) from None

    # --- Models -------------------------------------------------------------

    def create_model(self, name: str, dimension: int,
                     algorithm: Union[str, pb.Algorithm] = "perceptron", *,
                     classes: Sequence[str] = (), one_vs_rest: bool = False,
                     hash_bits: int = 0,
                     interactions: Sequence[Tuple[str, str]] = (),
                     standardize: bool = False, fit_intercept: bool = True,
                     progress_window: Optional[int] = None,
                     window_losses: bool = False,
                     replication: Optional[Dict[str, Any]] = None,
                     drift: Union[None, str, Dict[str, Any]] = None,
                     selective_sampling: Union[None, float,
                                               Dict[str, Any]] = None,
                     **parameters: Any) -> pb.Model:
        """Creates a model and returns its v1.Model. `algorithm` is a
        v1.Algorithm (halfspace.sgd(loss="log"), ...) or a field of it
        ("perceptron", "logistic_regression", "sgd", "softmax_regression",
        ...) whose parameters are `parameters`, e.g. learning_rate=0.1 or
        loss="log". `classes` lists a multiclass model's first classes;
        `one_vs_rest` makes a binary algorithm multiclass, a model per
        class. `interactions`: (group, group) pairs of named features to
        cross (with hash_bits). `replication`: a dict of v1.Replication's fields
        (stream, subject, replicas; {} for the defaults) makes a replicated
        model (a server started with --nats_url). `drift` sets a drift
        detector: "adwin", "page_hinkley" or "ddm" with its defaults, or a
        dict of v1.DriftDetection's fields, e.g. {"adwin": {"delta": 0.001},
        "input": "INPUT_LOSS"}; with "challenge": {} (or {"alpha": a}) a
        challenger learns beside the model after a warning and replaces it
        when McNemar's test finds it better (roll_back_model undoes it).
        `selective_sampling` lets predictions ask
        for labels (predict's `query`): b, or {"b": 0.5, "seed": 3}."""
        if isinstance(algorithm, pb.Algorithm):
            if parameters:
                raise ValueError("parameters go into the algorithm: "
                                 "halfspace.%s(%s)" % (
                                     algorithm.WhichOneof("algorithm"),
                                     ", ".join(parameters)))
            spec = algorithm
        else:
            spec = algorithms.algorithm(algorithm, **parameters)
        request = pb.CreateModelRequest(
            model=name, algorithm=spec, dimension=dimension,
            hash_bits=hash_bits, standardize=standardize,
            one_vs_rest=one_vs_rest, classes=list(classes),
            fit_intercept=fit_intercept, window_losses=window_losses,
            interactions=[pb.Interaction(first_group=a, second_group=b)
                          for a, b in interactions])
        if progress_window is not None:
            request.progress_window = progress_window
        if replication is not None:
            request.replication.CopyFrom(pb.Replication(**replication))
        if drift is not None:
            if isinstance(drift, str):
                drift = {drift: {}}
            json_format.ParseDict(drift, request.drift)
        if selective_sampling is not None:
            if not isinstance(selective_sampling, dict):
                selective_sampling = {"b": float(selective_sampling)}
            json_format.ParseDict(selective_sampling,
                                  request.selective_sampling)
        return self._call(self._stub.CreateModel, request).model

    def get_model(self, name: str) -> pb.Model:
        return self._call(self._stub.GetModel, pb.GetModelRequest(model=name),
                          read_only=True).model

    def list_models(self) -> List[pb.Model]:
        """Every model, in name order, however many pages it takes."""
        models: List[pb.Model] = []
        token = ""
        while True:
            page = self._call(self._stub.ListModels,
                              pb.ListModelsRequest(page_token=token),
                              read_only=True)
            models.extend(page.models)
            token = page.next_page_token
            if not token:
                return models

    def delete_model(self, name: str) -> None:
        self._call(self._stub.DeleteModel, pb.DeleteModelRequest(model=name))

    def _read_in_pages(self, method: Callable, request: Any,
                       join: Callable[[Any, Any], bool], changed: str,
                       advice: str) -> Any:
        """A paged response read whole: the first page (as much as fits),
        then each from the last one's next_offset, joined to the first by
        `join`. A page of another version than the first, one `join`
        refuses, or a later page refused as out of range (the thing
        shrank) means it changed while it was read: the read starts again,
        up to five times, and then raises Aborted."""
        tries = 5
        for _ in range(tries):
            request.offset = 0
            request.page_size = 2**63 - 1  # all that fit
            whole = self._call(method, request, read_only=True)
            torn = False
            while whole.next_offset != 0 and not torn:
                request.offset = whole.next_offset
                try:
                    page = self._call(method, request, read_only=True)
                except errors.InvalidArgument:
                    torn = True
                    break
                torn = page.version != whole.version or not join(whole, page)
                if not torn:
                    whole.next_offset = page.next_offset
            if not torn:
                return whole
        raise errors.Aborted("%s, %d times; %s" % (changed, tries, advice))

    def get_weights(self, name: str) -> Weights:
        """The model's weights at one version, read in as many pages as
        they take."""
        def join(whole, page):
            if len(page.classes) != len(whole.classes):
                return False
            whole.weights.extend(page.weights)
            for k, part in enumerate(page.classes):
                whole.classes[k].weights.extend(part.weights)
            return True

        whole = self._read_in_pages(
            self._stub.GetWeights, pb.GetWeightsRequest(model=name), join,
            "model %s changed while its weights were read in pages" % name,
            "read it while it does not train")
        return Weights(list(whole.weights), whole.bias,
                       {c.label: (list(c.weights), c.bias)
                        for c in whole.classes}, whole.version)

    def recent_examples(self, name: str) -> List[pb.RecentExample]:
        """The last examples (at most 200) a model of dimension 1 or 2
        learned, oldest first: v1.RecentExample messages."""
        return list(self._call(self._stub.GetRecentExamples,
                               pb.GetRecentExamplesRequest(model=name),
                               read_only=True).examples)

    def set_weights(self, name: str, weights: Iterable[float],
                    bias: float = 0.0, *, class_label: str = "") -> pb.Model:
        """Sets a binary model's weights and bias (or, with class_label, a
        multiclass model's class's); returns the v1.Model."""
        if hasattr(weights, "tolist"):
            weights = weights.tolist()
        request = pb.SetWeightsRequest(model=name, weights=list(weights),
                                       bias=float(bias),
                                       class_label=class_label)
        return self._call(self._stub.SetWeights, request).model

    def export_model(self, name: str) -> bytes:
        """The model's file, as import_model takes it, read at one
        version in as many pages as it takes."""
        def join(whole, page):
            whole.model_file += page.model_file
            return True

        return self._read_in_pages(
            self._stub.ExportModel, pb.ExportModelRequest(model=name), join,
            "model %s changed while its file was read in pages" % name,
            "export it while it does not train").model_file

    def import_model(self, name: str, model_file: bytes) -> pb.Model:
        """Creates model `name` from a file export_model returned."""
        return self._call(self._stub.ImportModel, pb.ImportModelRequest(
            model=name, model_file=model_file)).model

    def restore_model(self, name: str) -> pb.Model:
        """Rolls an unavailable model (its latest snapshot damaged, the log
        past it gone) back to its previous snapshot; FailedPrecondition
        for a model that is available."""
        return self._call(self._stub.RestoreModel,
                          pb.RestoreModelRequest(model=name)).model

    def roll_back_model(self, name: str) -> pb.Model:
        """Puts back the weights the model's drift reaction replaced at its
        last switch (a model created with drift={"adwin": {},
        "challenge": {}}); FailedPrecondition when none are kept."""
        return self._call(self._stub.RollBackModel,
                          pb.RollBackModelRequest(model=name)).model

    def set_drift_detection(self, name: str,
                            drift: Union[None, str, Dict[str, Any]]
                            ) -> pb.Model:
        """Sets the model's drift detector and reaction, as create_model's
        `drift` ("adwin", or {"adwin": {"delta": 0.002}, "challenge": {}});
        None removes them. Both start afresh; the weights and counters are
        kept. Returns the model after the change."""
        request = pb.SetDriftDetectionRequest(model=name)
        if drift is not None:
            if isinstance(drift, str):
                drift = {drift: {}}
            json_format.ParseDict(drift, request.drift)
        return self._call(self._stub.SetDriftDetection, request).model

    def watch_model(self, name: str, *, from_position: Optional[int] = None
                    ) -> Iterator[pb.WatchModelResponse]:
        """The model's events as they come: yields first a
        v1.WatchModelResponse with its name and drift state (and, with
        `from_position`, whether every event kept from there is), then one
        with each event (its `event` field: a warning, a drift, a
        challenger started, switched or dropped, a roll-back), first those
        the server keeps from `from_position` on. It lasts until the caller
        stops iterating (close() the generator) or the server ends it, which
        raises the error: NotFound once the model is deleted, Unavailable
        when the server shuts down."""
        request = pb.WatchModelRequest(model=name)
        if from_position is not None:
            request.from_position = from_position
        responses = self._stub.WatchModel(request, metadata=self._for(name))
        try:
            yield from responses
        except grpc.RpcError as error:
            raise errors.from_rpc_error(error) from None
        finally:
            responses.cancel()

    # --- Learning -----------------------------------------------------------

    def train(self, name: Union[str, Sequence[str]], X: Any, y: Any = None,
              *, weights: Any = None, batch_size: int = 1000,
              source: Optional[str] = None, first_sequence: int = 1
              ) -> Union[TrainTotals, Dict[str, TrainTotals]]:
        """Trains model `name` on examples and returns the TrainTotals the
        server summarised. Examples are scikit-learn's X and y (and sample
        `weights`), or, without y, (x, y) or (x, y, weight) tuples or
        v1.Examples. Every example is checked and made into a message
        before the first is sent: a ValueError means nothing was sent.

        With a `source`, examples are numbered from first_sequence and a
        model applies each number once: resending after a failure is safe
        (see exactly_once). With a list of names, one stream trains every
        model in order (a fan-out) and the result is {name: TrainTotals}.
        """
        batches = list(_batches(messages.examples(X, y, weights), batch_size))
        fan_out = not isinstance(name, str)
        models = list(name) if fan_out else [name]
        totals = {model: TrainTotals() for model in models}
        first_index = 0
        for response, size in zip(
                self._train_responses(name, batches, source, first_sequence,
                                      pb.TRAIN_RESULTS_SUMMARY),
                map(len, batches)):
            if fan_out:
                for i, model in enumerate(models):
                    totals[model].add(response.model_summaries[i],
                                      first_index,
                                      response.model_positions[i]
                                      if response.model_positions else 0)
            else:
                totals[name].add(response.summary, first_index,
                                 response.position)
            first_index += size
        return totals if fan_out else totals[name]

    def train_stream(self, name: Union[str, Sequence[str]], X: Any,
                     y: Any = None, *, weights: Any = None,
                     batch_size: int = 1000, source: Optional[str] = None,
                     first_sequence: int = 1) -> Iterator[Any]:
        """Streams examples (as train takes them) to the model in messages
        of batch_size, reading them as they are sent, and yields one
        v1.ExampleResult per example, in order; with a list of names (a
        fan-out), a list of one v1.ExampleResult per model. An example that
        is not one raises ValueError when it is reached: the ones before it
        were sent."""
        batches = _batches(messages.examples(X, y, weights), batch_size)
        fan_out = not isinstance(name, str)
        for response in self._train_responses(name, batches, source,
                                              first_sequence,
                                              pb.TRAIN_RESULTS_PER_EXAMPLE):
            if fan_out:
                yield from (list(r.models) for r in response.fan_out_results)
            else:
                yield from response.results

    def _train_responses(self, name, batches, source, first_sequence,
                         results):
        fan_out = not isinstance(name, str)
        first = {"models": list(name)} if fan_out else {"model": name}
        if source is not None:
            first["source"] = source

        def requests():
            sequence = first_sequence
            for i, batch in enumerate(batches):
                request = pb.TrainRequest(examples=batch, results=results,
                                          **(first if i == 0 else {}))
                if source is not None:
                    request.sequence = sequence
                    sequence += len(batch)
                yield request

        return self._stream(self._stub.Train, requests(),
                            self._for(name[0] if fan_out else name))

    def exactly_once(self, name: str, source: str) -> "ExactlyOnceTrainer":
        """A trainer that teaches model `name` the examples of producer
        `source` exactly once, numbering on from where the model stands."""
        return ExactlyOnceTrainer(self, name, source)

    def last_sequence(self, name: str, source: str) -> int:
        """The last sequence number model `name` applied from `source` (0:
        none)."""
        return self._call(self._stub.GetSourceSequence,
                          pb.GetSourceSequenceRequest(model=name,
                                                      source=source),
                          read_only=True).last_sequence

    def feedback(self, name: str, labels: Iterable[Sequence[Any]]
                 ) -> List[pb.ExampleResult]:
        """Delayed labels: learns `labels`, (example_id, label) or
        (example_id, label, weight) tuples (a multiclass model's label is
        a class name), for examples a remembering `predict` kept, exactly
        as `train` would have then. One v1.ExampleResult per label, in
        order: `duplicate` for an id already learned, an `error` (NOT_FOUND)
        for an unknown or expired one."""
        request = pb.FeedbackRequest(model=name)
        request.feedback.extend(self._feedback(labels))
        return list(self._call(self._stub.Feedback, request).results)

    def feedback_stream(self, name: str,
                        batches: Iterable[Iterable[Sequence[Any]]]
                        ) -> Iterator[pb.FeedbackStreamResponse]:
        """Delayed labels on one stream: each item of `batches` is a list
        of feedback tuples as `feedback` takes them, sent as one message;
        yields one v1.FeedbackStreamResponse per batch (its `error` set if
        the server refused the batch; the stream goes on)."""
        def requests():
            for batch in batches:
                yield pb.FeedbackStreamRequest(
                    model=name, feedback=self._feedback(batch))
        return self._stream(self._stub.FeedbackStream, requests(),
                            self._for(name))

    @staticmethod
    def _feedback(labels):
        out = []
        for i, item in enumerate(labels):
            f = pb.ExampleFeedback(example_id=item[0])
            label = messages.label(item[1], "feedback %d" % i)
            if isinstance(label, str):
                f.class_label = label
            else:
                f.label = label
            if len(item) > 2:
                f.weight = float(item[2])
            out.append(f)
        return out

    # --- Predicting and evaluating -------------------------------------------

    def predict(self, name: str, X: Any, *, remember: bool = False,
                example_ids: Optional[Sequence[str]] = None,
                top_k: Optional[int] = None, min_position: int = 0,
                query: bool = False) -> List[pb.Prediction]:
        """One v1.Prediction per feature vector (row) of X. With
        `remember`, the server keeps each for a later `feedback` (delayed
        labels) under the id the prediction's `example_id` names:
        `example_ids`, one per instance, or ids the server makes. A
        multiclass model returns every class's score, or with `top_k` the
        k highest, highest first (0: the predicted class alone). On a
        replicated model, `min_position` (a train's position) waits until
        this server's replica has applied it. With `query` (a model created
        with selective_sampling, and `remember` or `example_ids`), each
        prediction's `query` says whether to ask for its label and the
        importance weight a remembered one's feedback learns with."""
        request = pb.PredictRequest(
            model=name, instances=messages.feature_vectors(X),
            remember=remember, example_ids=list(example_ids or []),
            min_position=min_position, query=query)
        if top_k is not None:
            request.top_k = top_k
        return list(self._call(self._stub.Predict, request,
                               read_only=not remember).predictions)

    def predict_arrays(self, name: str, X: Any, *, min_position: int = 0
                       ) -> PredictionArrays:
        """predict's answer for the rows of X as numpy arrays (numpy must be
        installed): see PredictionArrays."""
        np = _numpy()
        predictions = self.predict(name, X, min_position=min_position)
        if predictions and predictions[0].predicted_class:
            classes = [c.label for c in predictions[0].class_scores]
            scores = np.array([[c.score for c in p.class_scores]
                               for p in predictions], dtype=np.float64)
            probabilities = None
            if all(c.HasField("probability")
                   for c in predictions[0].class_scores):
                probabilities = np.array(
                    [[c.probability for c in p.class_scores]
                     for p in predictions], dtype=np.float64)
            labels = np.array([p.predicted_class for p in predictions],
                              dtype=object)
            return PredictionArrays(labels, scores, probabilities, classes)
        probabilities = None
        if predictions and predictions[0].HasField("probability"):
            probabilities = np.array([p.probability for p in predictions],
                                     dtype=np.float64)
        return PredictionArrays(
            np.array([p.label for p in predictions], dtype=np.int32),
            np.array([p.score for p in predictions], dtype=np.float64),
            probabilities, None)

    def predict_stream(self, name: str, batches: Iterable[Any], *,
                       remember: bool = False, top_k: Optional[int] = None,
                       query: bool = False
                       ) -> Iterator[pb.PredictStreamResponse]:
        """Predictions on one stream: each item of `batches` is many
        examples' features (as predict's X), sent as one message; yields
        one v1.PredictStreamResponse per batch (its `error` set if the
        server refused the batch; the stream goes on). `remember`, `top_k`
        and `query` as predict's (a query here needs `remember`: the
        server makes each instance's id)."""
        def requests():
            for batch in batches:
                request = pb.PredictStreamRequest(
                    model=name, instances=messages.feature_vectors(batch),
                    remember=remember, query=query)
                if top_k is not None:
                    request.top_k = top_k
                yield request
        return self._stream(self._stub.PredictStream, requests(),
                            self._for(name))

    def evaluate(self, name: str, X: Any, y: Any = None, *,
                 batch_size: int = 1000, threshold: Optional[float] = None,
                 omit_confusion: bool = False) -> pb.EvaluateResponse:
        """Scores examples (as train takes them) without learning; returns
        a v1.EvaluateResponse (accuracy, per-class metrics, the confusion
        matrix unless `omit_confusion`, log loss)."""
        first: Dict[str, Any] = {"model": name}
        if threshold is not None:
            first["threshold"] = threshold
        if omit_confusion:
            first["omit_confusion"] = True
        batches = _batches(messages.examples(X, y), batch_size)
        requests = _Requests(
            pb.EvaluateRequest(examples=batch, **(first if i == 0 else {}))
            for i, batch in enumerate(batches))
        try:
            return self._stub.Evaluate(requests, timeout=self._timeout,
                                       metadata=self._for(name))
        except grpc.RpcError as error:
            raise requests.error(error) from None

    # --- Champions and challengers ----------------------------------------

    def compare(self, models: Sequence[str], *, alpha: Optional[float] = None
                ) -> List[pb.ModelComparison]:
        """Champion/challenger: one v1.ModelComparison per model of
        `models` (the champion first), each with its progressive accuracy
        and loss (`stats`) and, but the first, McNemar's test against the
        champion on the examples both learned in fan-out streams
        (`versus_first`: the paired counts, p_value, significant)."""
        request = pb.CompareModelsRequest(models=list(models))
        if alpha is not None:
            request.alpha = alpha
        return list(self._call(self._stub.CompareModels, request,
                               read_only=True).models)

    def set_alias(self, alias: str, model: str, *,
                  expected: Optional[str] = None) -> str:
        """Points `alias` at `model` (promotes it) and returns the model it
        pointed to before ("" if none); with `expected`, only if it points
        to that model now ("": only if new). Calls through the alias reach
        one model or the other, never a mix."""
        request = pb.SetAliasRequest(alias=alias, model=model)
        if expected is not None:
            request.expected_model = expected
        return self._call(self._stub.SetAlias, request).previous_model

    def delete_alias(self, alias: str) -> str:
        """Removes `alias`; returns the model it pointed to."""
        return self._call(self._stub.DeleteAlias,
                          pb.DeleteAliasRequest(alias=alias)).model

    def aliases(self) -> Dict[str, str]:
        """Every alias as {alias: model}."""
        response = self._call(self._stub.ListAliases,
                              pb.ListAliasesRequest(), read_only=True)
        return {a.alias: a.model for a in response.aliases}

    # --- The server ---------------------------------------------------------

    def stats(self) -> pb.GetStatsResponse:
        """The server's usage: each model's memory and calls, its limits
        and what they refused, open streams, log syncs."""
        return self._call(self._stub.GetStats, pb.GetStatsRequest(),
                          read_only=True)

    def health(self, service: str = "") -> str:
        """The gRPC health status: "SERVING", "NOT_SERVING", ...; `service`
        "" for the server, "halfspace.v1.HalfspaceService" for the API."""
        stub = health_pb2_grpc.HealthStub(self._channel)
        response = self._call(stub.Check,
                              health_pb2.HealthCheckRequest(service=service),
                              read_only=True)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(
            response.status)

    def services(self) -> List[str]:
        """The services the server lists by gRPC reflection."""
        stub = reflection_pb2_grpc.ServerReflectionStub(self._channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        for response in self._stream(stub.ServerReflectionInfo, [request],
                                     self._metadata, timeout=self._timeout):
            return sorted(s.name for s in
                          response.list_services_response.service)
        return []


class ExactlyOnceTrainer:
    """Trains one model from one producer exactly once, across server
    restarts and lost connections.

    Every example is numbered (1, 2, 3, ... in the order given to train)
    under the producer's `source`. When a call fails for a reason a retry
    can cure (UNAVAILABLE, CANCELLED, ABORTED, DEADLINE_EXCEEDED) the batch
    is sent again, after a backoff, for up to `give_up_after` seconds:
    whatever part of it the server had already applied is answered as
    duplicates and not applied again. A producer that restarts makes a new
    trainer, which numbers on from the model's last applied number.

    Not thread-safe: one producer thread per trainer.
    """

    def __init__(self, client: Client, name: str, source: str, *,
                 give_up_after: float = 60.0):
        self._client = client
        self.name = name
        self.source = source
        self._give_up_after = give_up_after
        self._lock = threading.Lock()
        self.last_applied = self._retrying(
            lambda: client.last_sequence(name, source))

    def train(self, X: Any, y: Any = None, *, weights: Any = None,
              batch_size: int = 1000) -> TrainTotals:
        """Trains the examples (as Client.train takes them) as the next
        sequence numbers and returns their totals once the server has them.
        An error a retry cannot cure (NotFound, InvalidArgument, ...) is
        raised at once; the examples' numbers are then not used up."""
        examples = list(messages.examples(X, y, weights))
        with self._lock:
            first = self.last_applied + 1
            totals = self._retrying(lambda: self._client.train(
                self.name, examples, batch_size=batch_size,
                source=self.source, first_sequence=first))
            self.last_applied += len(examples)
            return totals

    def _retrying(self, call: Callable[[], Any]) -> Any:
        give_up = time.monotonic() + self._give_up_after
        attempt = 1
        while True:
            try:
                return call()
            except errors.Error as error:
                attempt += 1
                pause = _backoff(attempt)
                if error.code() not in _RETRYABLE or \
                        time.monotonic() + pause >= give_up:
                    raise
                time.sleep(pause)
