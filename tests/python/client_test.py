"""The Python client against a real server process on a Unix socket.

Run by ctest with PYTHONPATH=client/python and HALFSPACE_SERVER_BINARY set.
"""

import math
import os
import subprocess
import tempfile
import threading
import unittest

import grpc

import halfspace
from server_process import ServerProcess


class ClientTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess()
        cls.client = halfspace.Client(cls.server.target)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.stop()

    def test_a_rate_limited_call_waits_its_pushback_and_succeeds(self):
        with tempfile.TemporaryDirectory() as d:
            target = "unix:" + os.path.join(d, "limited.sock")
            server = subprocess.Popen(
                [os.environ["HALFSPACE_SERVER_BINARY"], "--listen=" + target,
                 "--data_dir=" + os.path.join(d, "data"),
                 "--anonymous_calls_per_second=20",
                 "--anonymous_calls_burst=1", "--log_level=warn"])
            try:
                channel = grpc.insecure_channel(target)
                grpc.channel_ready_future(channel).result(timeout=30)
                channel.close()
                client = halfspace.Client(target)
                for i in range(5):  # 20 a second, one at a time: all pass
                    client.create_model("py-limited-%d" % i, dimension=1)
                self.assertEqual(
                    client.get_model("py-limited-4").name, "py-limited-4")
                client.close()
            finally:
                server.terminate()
                server.wait(timeout=30)

    def test_health_and_reflection(self):
        self.assertEqual(self.client.health(), "SERVING")
        self.assertEqual(self.client.health("halfspace.v1.HalfspaceService"),
                         "SERVING")
        services = self.client.services()
        self.assertIn("halfspace.v1.HalfspaceService", services)
        self.assertIn("grpc.health.v1.Health", services)

    def test_the_perceptron_learns_as_the_classic_rule_says(self):
        model = self.client.create_model("py-perceptron", dimension=2)
        self.assertEqual(model.dimension, 2)
        results = list(self.client.train_stream(
            "py-perceptron", [([1, 2], 1), ([2, 1], -1), ([1, 2], 1)]))
        self.assertEqual(len(results), 3)
        # w = 0: the score is 0, a mistake (M <= 0), so it updates.
        self.assertEqual((results[0].score, results[0].margin), (0.0, 0.0))
        self.assertTrue(results[0].updated)
        # w = (1, 2), b = 1: f(2, 1) = 5, y = -1, M = -5.
        self.assertEqual((results[1].score, results[1].margin), (5.0, -5.0))
        self.assertTrue(results[1].updated)
        # w = (-1, 1), b = 0: f(1, 2) = 1, M = 1 > 0, no update.
        self.assertEqual(results[2].score, 1.0)
        self.assertFalse(results[2].updated)
        self.assertEqual(results[2].examples_seen, 3)

        [p] = self.client.predict("py-perceptron", [[1, 2]])
        self.assertEqual((p.label, p.score), (1, 1.0))
        self.assertAlmostEqual(p.signed_distance, 1 / math.sqrt(2))
        self.assertEqual(
            self.client.get_model("py-perceptron").stats.updates, 2)

    def test_a_bad_example_is_reported_in_band_and_the_stream_goes_on(self):
        self.client.create_model("py-bad", dimension=2)
        results = list(self.client.train_stream(
            "py-bad", [([1, 2], 1), ([1, 2, 3], 1), ([1, math.nan], 1),
                       ([2, 1], -1)]))
        codes = [r.error.code for r in results]
        invalid = grpc.StatusCode.INVALID_ARGUMENT.value[0]
        self.assertEqual(codes, [0, invalid, invalid, 0])
        self.assertIn("dimension", results[1].error.message)
        self.assertEqual(results[3].examples_seen, 2)

    def test_training_reads_a_generator_in_batches(self):
        self.client.create_model("py-stream", dimension=3,
                                 algorithm="logistic_regression",
                                 learning_rate=0.5)
        first_result = threading.Event()
        waited = []

        def examples():
            for i in range(2500):
                if i == 1000:  # the first batch must be answered by now
                    waited.append(first_result.wait(timeout=20))
                yield ([i % 7, 1.0, -(i % 3)], 1 if i % 7 > i % 3 else -1)

        seen = []
        for r in self.client.train_stream("py-stream", examples(),
                                          batch_size=1000):
            first_result.set()
            seen.append(r.examples_seen)
        self.assertEqual(waited, [True], "not streamed: read all, then sent")
        self.assertEqual(seen, list(range(1, 2501)))
        [p] = self.client.predict("py-stream", [[6, 1, 0]])
        self.assertGreater(p.probability, 0.5)

    def test_sources_make_training_exactly_once(self):
        self.client.create_model("py-once", dimension=2)
        data = [([1, 2], 1), ([2, 1], -1)]
        first = list(self.client.train_stream("py-once", data,
                                              source="loader"))
        again = list(self.client.train_stream("py-once", data,
                                              source="loader"))
        self.assertEqual([r.duplicate for r in first], [False, False])
        self.assertEqual([r.duplicate for r in again], [True, True])
        self.assertEqual(
            self.client.get_model("py-once").stats.examples_seen, 2)

    def test_multiclass_named_features_and_evaluation(self):
        self.client.create_model("py-animals", dimension=0, hash_bits=10,
                                 algorithm="softmax_regression")
        data = [([("legs", "four", 1.0), ("sound", "bark", 1.0)], "dog"),
                ([("legs", "four", 1.0), ("sound", "meow", 1.0)], "cat"),
                ([("legs", "two", 1.0), ("sound", "tweet", 1.0)], "bird")]
        for _ in range(30):
            self.client.train("py-animals", data)
        [p] = self.client.predict("py-animals", [data[2][0]])
        self.assertEqual(p.predicted_class, "bird")
        self.assertEqual(len(p.class_scores), 3)
        [top] = self.client.predict("py-animals", [data[2][0]], top_k=1)
        self.assertEqual([c.label for c in top.class_scores], ["bird"])
        [bare] = self.client.predict("py-animals", [data[2][0]], top_k=0)
        self.assertEqual((bare.predicted_class, len(bare.class_scores)),
                         ("bird", 0))
        report = self.client.evaluate("py-animals", data)
        self.assertEqual((report.examples, report.rejected), (3, 0))
        self.assertEqual(report.accuracy, 1.0)
        self.assertEqual(sorted(report.confusion_labels),
                         ["bird", "cat", "dog"])
        self.assertEqual(len(report.confusion), 9)
        lean = self.client.evaluate("py-animals", data, omit_confusion=True)
        self.assertEqual((lean.accuracy, len(lean.confusion)), (1.0, 0))

    def test_delayed_labels_learn_as_training_then_would(self):
        for name in ("py-clicks", "py-trained"):
            self.client.create_model(name, dimension=2,
                                     algorithm="logistic_regression")
        shown = self.client.predict("py-clicks", [[1, 0], [0, 1]],
                                    remember=True)
        ids = [p.example_id for p in shown]
        self.assertEqual(len(set(ids)), 2)
        results = self.client.feedback(
            "py-clicks", [(ids[1], -1), (ids[0], 1), (ids[1], 1),
                          ("py-nope", 1)])
        self.assertTrue(results[0].updated)
        self.assertTrue(results[2].duplicate)
        self.assertEqual(results[3].error.code,
                         grpc.StatusCode.NOT_FOUND.value[0])
        self.client.train("py-trained", [halfspace.example([0, 1], -1),
                                         halfspace.example([1, 0], 1)])
        for x in ([1, 0], [0, 1], [2, -1]):
            self.assertEqual(self.client.predict("py-clicks", [x])[0].score,
                             self.client.predict("py-trained", [x])[0].score)
        stats = self.client.get_model("py-clicks").stats
        self.assertEqual((stats.pending_joined, stats.pending_waiting), (2, 0))

    def test_champion_and_challenger_share_a_stream_and_one_is_promoted(self):
        self.client.create_model("py-champion", dimension=2)
        self.client.create_model("py-challenger", dimension=2,
                                 algorithm="logistic_regression",
                                 progress_window=2, window_losses=True)
        self.assertEqual(self.client.set_alias("py-prod", "py-champion"), "")
        data = [([1, 2], 1), ([2, 1], -1), ([0, 0], -1), ([2, 2], 1)]
        results = list(self.client.train_stream(
            ["py-champion", "py-challenger"], data))
        self.assertEqual(len(results), 4)
        # The perceptron's first two examples, by hand: scores 0 and 5.
        self.assertEqual([r[0].score for r in results[:2]], [0, 5])
        self.assertEqual(results[0][1].probability, 0.5)
        champion, challenger = self.client.compare(
            ["py-champion", "py-challenger"])
        self.assertFalse(champion.HasField("versus_first"))
        self.assertEqual(challenger.stats.window_examples, 2)
        # Only a model that keeps its window's losses reports their mean.
        self.assertTrue(challenger.stats.HasField("window_loss"))
        self.assertFalse(champion.stats.HasField("window_loss"))
        test = challenger.versus_first
        self.assertEqual(test.examples, 4)
        wrong = [[r[k].predicted_label != y for r, (_, y) in zip(results, data)]
                 for k in (0, 1)]
        self.assertEqual(test.only_first_wrong,
                         sum(a and not b for a, b in zip(*wrong)))
        self.assertEqual(test.only_this_wrong,
                         sum(b and not a for a, b in zip(*wrong)))
        self.assertEqual(self.client.set_alias(
            "py-prod", "py-challenger", expected="py-champion"), "py-champion")
        with self.assertRaises(grpc.RpcError) as caught:
            self.client.set_alias("py-prod", "py-champion",
                                  expected="py-champion")
        self.assertEqual(caught.exception.code(),
                         grpc.StatusCode.FAILED_PRECONDITION)
        self.assertEqual(self.client.get_model("py-prod").name,
                         "py-challenger")
        self.assertEqual(self.client.aliases(), {"py-prod": "py-challenger"})
        self.assertEqual(self.client.delete_alias("py-prod"), "py-challenger")

    def test_replication_and_positions_reach_the_server(self):
        # This server follows no NATS cluster: a replicated model is
        # refused, and a position is only for replicated models.
        with self.assertRaises(grpc.RpcError) as caught:
            self.client.create_model("py-replicated", 2,
                                     replication={"replicas": 3})
        self.assertEqual(caught.exception.code(),
                         grpc.StatusCode.FAILED_PRECONDITION)
        self.client.create_model("py-local", 2)
        with self.assertRaises(grpc.RpcError) as caught:
            self.client.predict("py-local", [[1.0, 2.0]], min_position=5)
        self.assertEqual(caught.exception.code(),
                         grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(len(self.client.predict("py-local", [[1.0, 2.0]])), 1)

    def test_errors_carry_the_status_code(self):
        with self.assertRaises(grpc.RpcError) as caught:
            self.client.get_model("py-missing")
        self.assertEqual(caught.exception.code(), grpc.StatusCode.NOT_FOUND)
        with self.assertRaises(grpc.RpcError) as caught:
            self.client.create_model("py-zero", dimension=0)
        self.assertEqual(caught.exception.code(),
                         grpc.StatusCode.INVALID_ARGUMENT)
        with self.assertRaises(ValueError):
            self.client.create_model("py-x", dimension=2, algorithm="svm")

    def test_errors_are_classes_by_status_with_the_servers_message(self):
        with self.assertRaises(halfspace.NotFound) as caught:
            self.client.get_model("py-absent")
        error = caught.exception
        self.assertIsInstance(error, LookupError)
        self.assertIn("py-absent", error.message)
        self.assertEqual(error.details(), error.message)
        with self.assertRaises(halfspace.InvalidArgument) as caught:
            self.client.create_model("py-bad-rate", 2, learning_rate=-1)
        self.assertIn("learning_rate", str(caught.exception))
        self.client.create_model("py-twice", 1)
        with self.assertRaises(halfspace.AlreadyExists):
            self.client.create_model("py-twice", 1)
        with self.assertRaises(halfspace.FailedPrecondition):
            self.client.set_alias("py-twice-alias", "py-twice", expected="x")

    def test_scikit_learn_shapes_numpy_labels_and_eager_totals(self):
        import numpy as np
        self.client.create_model("py-numpy", 2)
        X = np.array([[1.0, 2.0], [2.0, 1.0], [1.0, 2.0]])
        y = np.array([1.0, -1.0, 1.0])  # float labels, as numpy gives them
        totals = self.client.train("py-numpy", X, y)
        # The classic rule, as in the test above: updates at M = 0 (w = 0)
        # and M = -5, none at M = 1.
        self.assertEqual((totals.examples, totals.updates, totals.mistakes),
                         (3, 2, 1))  # f = 0 predicts +1: right, yet M = 0
        self.assertEqual(totals.errors, [])
        self.assertAlmostEqual(totals.accuracy, 2 / 3)
        [p] = self.client.predict("py-numpy", np.array([[1.0, 2.0]]))
        self.assertEqual(p.score, 1.0)
        # A label that is not one: nothing is sent, the model is unchanged.
        with self.assertRaises(ValueError) as caught:
            self.client.train("py-numpy", X, np.array([1.0, 0.5, -1.0]))
        self.assertIn("example 1's label is 0.5", str(caught.exception))
        with self.assertRaises(ValueError):
            self.client.train("py-numpy", X, [1, -1])  # 3 rows, 2 labels
        self.assertEqual(self.client.get_model("py-numpy").stats.examples_seen,
                         3)
        # The server's refusals are in the totals, indexed in the call.
        totals = self.client.train("py-numpy", [[1, 1]] * 3 + [[1, 2, 3]],
                                   [1, 1, 1, 1], batch_size=2)
        self.assertEqual(totals.examples, 3)
        [(index, error)] = totals.errors
        self.assertEqual(index, 3)
        self.assertIsInstance(error, halfspace.InvalidArgument)

    def test_scipy_sparse_matrices_are_sparse_examples(self):
        import scipy.sparse
        self.client.create_model("py-sparse", 4)
        X = scipy.sparse.csr_matrix([[0, 2.0, 0, 0], [1.0, 0, 0, 3.0]])
        totals = self.client.train("py-sparse", X, [1, -1])
        self.assertEqual(totals.updates, 2)
        weights = self.client.get_weights("py-sparse")
        # w = (0, 2, 0, 0) + 1 then -(1, 0, 0, 3) - 1 (f = 2·0 + 1 = 1 > 0
        # for the second: a mistake).
        self.assertEqual(weights.weights, [-1.0, 2.0, 0.0, -3.0])
        self.assertEqual(weights.bias, 0.0)
        [p] = self.client.predict("py-sparse", X[1])
        self.assertEqual(p.score, -1.0 - 9.0)

    def test_an_exception_in_the_examples_is_raised_not_unknown(self):
        self.client.create_model("py-raises", 1)

        def examples():
            yield [1.0], 1
            raise KeyError("the producer's own failure")

        with self.assertRaises(KeyError):
            list(self.client.train_stream("py-raises", examples()))

    def test_algorithms_by_keyword_with_enums_by_name(self):
        model = self.client.create_model(
            "py-sgd", 2, halfspace.sgd(loss="log", alpha=1e-4,
                                       penalty="elasticnet"))
        self.assertEqual(model.algorithm.sgd.loss,
                         halfspace.v1.halfspace_pb2.Sgd.LOSS_LOG)
        self.assertEqual(model.algorithm.sgd.penalty,
                         halfspace.v1.halfspace_pb2.Sgd.PENALTY_ELASTIC_NET)
        model = self.client.create_model("py-pa", 2, "passive_aggressive",
                                         variant="pa_ii", aggressiveness=0.5)
        self.assertEqual(model.algorithm.passive_aggressive.variant,
                         halfspace.v1.halfspace_pb2.PassiveAggressive.VARIANT_PA_II)
        with self.assertRaises(ValueError) as caught:
            halfspace.sgd(loss="squared")
        self.assertIn("'squared_hinge'", str(caught.exception))
        with self.assertRaises(ValueError):
            self.client.create_model("py-sgd2", 2, "sgd", rate=1)

    def test_ftrl_proximal_keeps_few_weights_and_counts_them(self):
        import numpy as np
        self.client.create_model(
            "py-ftrl", 20, halfspace.ftrl_proximal(alpha=0.5, l1=25))
        rng = np.random.default_rng(5)
        X = rng.normal(size=(1000, 20))
        self.client.train("py-ftrl", X, np.where(X[:, 0] > X[:, 1], 1, -1))
        weights = np.array(self.client.get_weights("py-ftrl").weights)
        stats = self.client.get_model("py-ftrl").stats
        self.assertEqual(stats.nonzero_weights, np.count_nonzero(weights))
        self.assertGreater(weights[0], 0)
        self.assertLess(weights[1], 0)
        self.assertLess(stats.nonzero_weights, 10)
        with self.assertRaises(halfspace.InvalidArgument) as caught:
            self.client.create_model("py-ftrl2", 2,
                                     halfspace.ftrl_proximal(l1=-1))
        self.assertIn("ftrl_proximal.l1", str(caught.exception))

    def test_weights_files_stats_and_sequences(self):
        self.client.create_model("py-weights", 3)
        self.client.set_weights("py-weights", [0.5, -1.0, 2.0], bias=0.25)
        weights = self.client.get_weights("py-weights")
        self.assertEqual((weights.weights, weights.bias),
                         ([0.5, -1.0, 2.0], 0.25))
        file = self.client.export_model("py-weights")
        copy = self.client.import_model("py-weights-copy", file)
        self.assertEqual(copy.dimension, 3)
        self.assertEqual(self.client.get_weights("py-weights-copy").weights,
                         [0.5, -1.0, 2.0])
        # Only an unavailable model (a damaged snapshot) is rolled back.
        with self.assertRaises(halfspace.FailedPrecondition):
            self.client.restore_model("py-weights-copy")
        self.assertIn("py-weights",
                      [m.name for m in self.client.stats().models])
        self.client.train("py-weights", [[1, 0, 0]] * 4, [1] * 4,
                          source="py-producer", first_sequence=7)
        self.assertEqual(self.client.last_sequence("py-weights",
                                                   "py-producer"), 10)

    def test_drift_detection(self):
        model = self.client.create_model("py-drift", 2, drift="ddm")
        self.assertEqual(model.drift.ddm.drift_level, 3)
        model = self.client.create_model(
            "py-drift-adwin", 2,
            drift={"adwin": {"delta": 0.001}, "input": "INPUT_LOSS"})
        self.assertEqual(model.drift.adwin.warning_delta, 0.01)
        self.assertEqual(model.drift.input, model.drift.INPUT_LOSS)
        xs = [[math.sin(i * 1.3), math.cos(i * 0.7)] for i in range(4000)]
        ys = [(1 if x - 0.5 * z > 0 else -1) * (1 if i < 2000 else -1)
              for i, (x, z) in enumerate(xs)]
        self.client.train("py-drift", xs, ys)
        state = self.client.get_model("py-drift").stats.drift
        self.assertGreater(state.drifts, 0)
        self.assertGreater(state.last_drift_at, 2000)
        with self.assertRaises(halfspace.InvalidArgument):
            self.client.create_model("py-drift-bad", 2,
                                     drift={"adwin": {"delta": 2}})

    def test_set_drift_detection(self):
        self.client.create_model("py-drift-later", 2)
        xs = [[math.sin(i * 1.3), math.cos(i * 0.7)] for i in range(4000)]
        ys = [(1 if x - 0.5 * z > 0 else -1) * (1 if i < 2000 else -1)
              for i, (x, z) in enumerate(xs)]
        self.client.train("py-drift-later", xs[:1000], ys[:1000])
        model = self.client.set_drift_detection(
            "py-drift-later", {"ddm": {"warm_start": 50}})
        self.assertEqual(model.drift.ddm.warm_start, 50)
        self.assertEqual(model.stats.examples_seen, 1000)
        self.client.train("py-drift-later", xs[1000:], ys[1000:])
        state = self.client.get_model("py-drift-later").stats.drift
        self.assertGreater(state.drifts, 0)
        self.assertGreater(state.last_drift_at, 2000)
        model = self.client.set_drift_detection("py-drift-later", None)
        self.assertFalse(model.HasField("drift"))
        self.assertFalse(model.stats.HasField("drift"))
        with self.assertRaises(halfspace.InvalidArgument):
            self.client.set_drift_detection("py-drift-later",
                                            {"adwin": {"delta": 2}})
        with self.assertRaises(halfspace.NotFound):
            self.client.set_drift_detection("py-nobody", "adwin")

    def test_drift_reaction(self):
        # A slow learner that a fresh challenger beats after a reversal.
        model = self.client.create_model(
            "py-react", 2, "logistic_regression", learning_rate=0.01,
            drift={"adwin": {}, "challenge": {"alpha": 0.01}})
        self.assertEqual(model.drift.challenge.alpha, 0.01)
        watch = self.client.watch_model("py-react")
        first = next(watch)
        self.assertEqual(first.model, "py-react")
        self.assertEqual(first.drift.drifts, 0)
        xs = [[math.sin(i * 1.3), math.cos(i * 0.7)] for i in range(12000)]
        ys = [(1 if x - 0.5 * z > 0 else -1) * (1 if i < 8000 else -1)
              for i, (x, z) in enumerate(xs)]
        self.client.train("py-react", xs, ys)
        reaction = self.client.get_model("py-react").stats.drift.reaction
        self.assertGreaterEqual(reaction.switches, 1)
        self.assertGreater(reaction.last_switch_at, 8000)
        self.assertLess(reaction.last_switch_p_value, 0.01)
        self.assertTrue(reaction.can_roll_back)
        # The watch tells of the switch where the model's state says it was.
        events = halfspace.v1.halfspace_pb2.ModelEvent
        event = next(watch).event
        while not (event.kind == events.KIND_SWITCHED and
                   event.position == reaction.last_switch_at):
            self.assertLess(event.position, reaction.last_switch_at)
            event = next(watch).event
        self.assertEqual(event.p_value, reaction.last_switch_p_value)
        watch.close()
        switched = self.client.get_weights("py-react").weights
        model = self.client.roll_back_model("py-react")
        self.assertFalse(model.stats.drift.reaction.can_roll_back)
        resumed = self.client.watch_model("py-react",
                                          from_position=12000)
        self.assertTrue(next(resumed).complete)
        event = next(resumed).event
        self.assertEqual(event.kind, events.KIND_ROLLED_BACK)
        self.assertEqual(event.position, 12000)
        resumed.close()
        self.assertNotEqual(self.client.get_weights("py-react").weights,
                            switched)
        with self.assertRaises(halfspace.FailedPrecondition):
            self.client.roll_back_model("py-react")

    def test_selective_sampling(self):
        # The draw as the README defines it, written here apart from the
        # server's: FNV-1a-64 of the id, XOR the seed, SplitMix64, 53 bits.
        mask = (1 << 64) - 1

        def draw(seed, example_id):
            h = 0xCBF29CE484222325
            for c in example_id.encode():
                h = ((h ^ c) * 0x100000001B3) & mask
            z = ((h ^ seed) + 0x9E3779B97F4A7C15) & mask
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
            return ((z ^ (z >> 31)) >> 11) * 2.0 ** -53

        model = self.client.create_model(
            "py-sampling", 2, selective_sampling={"b": 0.5, "seed": 12})
        self.assertEqual(model.selective_sampling.b, 0.5)
        self.assertEqual(model.selective_sampling.seed, 12)
        xs = [[math.sin(i * 1.3), math.cos(i * 0.7)] for i in range(300)]
        ys = [1 if x - 0.5 * z > 0 else -1 for x, z in xs]
        self.client.train("py-sampling", xs[:100], ys[:100])
        predictions = self.client.predict("py-sampling", xs[100:],
                                          remember=True, query=True)
        labels = []
        for p, y in zip(predictions, ys[100:]):
            probability = 0.5 / (0.5 + abs(p.score))
            self.assertEqual(p.query.probability, probability)
            self.assertEqual(p.query.ask,
                             draw(12, p.example_id) < probability)
            if p.query.ask:
                self.assertEqual(p.query.weight, 1 / probability)
                labels.append((p.example_id, y))
        self.assertTrue(0 < len(labels) < 200)
        # The same queries over a prediction stream.
        streamed = [p for r in self.client.predict_stream(
                        "py-sampling", [xs[100:200], xs[200:]],
                        remember=True, query=True)
                    for p in r.predictions]
        self.assertEqual(len(streamed), 200)
        for p in streamed:
            probability = 0.5 / (0.5 + abs(p.score))
            self.assertEqual(p.query.probability, probability)
            self.assertEqual(p.query.ask,
                             draw(12, p.example_id) < probability)
        results = self.client.feedback("py-sampling", labels)
        self.assertTrue(all(not r.HasField("error") for r in results))
        self.client.create_model("py-no-sampling", 2)
        with self.assertRaises(halfspace.FailedPrecondition):
            self.client.predict("py-no-sampling", xs[:1], example_ids=["a"],
                                query=True)

    def test_recent_examples_and_limits(self):
        self.client.create_model("py-recent", 2)
        xs = [[i, -i] for i in range(230)]
        ys = [1 if i % 3 else -1 for i in range(230)]
        self.client.train("py-recent", xs, ys)
        recent = self.client.recent_examples("py-recent")
        # The last 200, oldest first, as they were given.
        self.assertEqual([list(e.features) for e in recent], xs[30:])
        self.assertEqual([e.label for e in recent], ys[30:])
        self.assertTrue(all(not e.class_label for e in recent))
        # The first example is a mistake (f(x) = 0 predicts +1; y = -1);
        # a model that keeps learning from a new point errs on some.
        self.assertGreater(sum(e.mistake for e in recent), 0)
        self.client.create_model("py-recent-classes", 1,
                                 "multiclass_perceptron")
        self.client.train("py-recent-classes", [[1.5], [-2.0]], ["up", "down"])
        self.assertEqual(
            [(list(e.features), e.class_label, e.mistake)
             for e in self.client.recent_examples("py-recent-classes")],
            # The first class is the only one: predicted right.
            [([1.5], "up", False), ([-2.0], "down", True)])
        self.client.create_model("py-recent-wide", 3)
        self.client.train("py-recent-wide", [[1, 2, 3]], [1])
        self.assertEqual(self.client.recent_examples("py-recent-wide"), [])
        self.client.create_model("py-recent-hashed", 2, hash_bits=4)
        self.client.train("py-recent-hashed", [[1, 2]], [1])
        self.assertEqual(self.client.recent_examples("py-recent-hashed"), [])
        with self.assertRaises(halfspace.NotFound):
            self.client.recent_examples("py-recent-missing")
        limits = {s.limit: s.value for s in self.client.stats().limits}
        self.assertEqual(limits["max_classes"], 4096)
        self.assertEqual(limits["pending_ttl"], 86400)
        self.assertEqual(limits["max_models"], 10000)  # the default

    def test_predictions_as_numpy_arrays(self):
        import numpy as np
        self.client.create_model("py-arrays", 2, "logistic_regression")
        self.client.set_weights("py-arrays", [1.0, -1.0], bias=0.5)
        X = np.array([[1.0, 0.0], [0.0, 2.0], [0.25, 0.75]])
        got = self.client.predict_arrays("py-arrays", X)
        scores = X @ np.array([1.0, -1.0]) + 0.5
        self.assertEqual(got.scores.dtype, np.float64)
        np.testing.assert_array_equal(got.scores, scores)
        np.testing.assert_array_equal(got.labels, [1, -1, 1])
        self.assertEqual(got.labels.dtype, np.int32)
        np.testing.assert_allclose(got.probabilities,
                                   1 / (1 + np.exp(-scores)), rtol=1e-15)
        self.assertIsNone(got.classes)
        self.client.create_model("py-arrays-k", 1, "softmax_regression",
                                 classes=["a", "b", "c"])
        self.client.set_weights("py-arrays-k", [2.0], bias=0.0,
                                class_label="b")
        got = self.client.predict_arrays("py-arrays-k", [[1.0], [-1.0]])
        self.assertEqual(got.classes, ["a", "b", "c"])
        np.testing.assert_array_equal(got.scores,
                                      [[0, 2, 0], [0, -2, 0]])
        self.assertEqual(list(got.labels), ["b", "a"])
        self.assertEqual(got.probabilities.shape, (2, 3))
        np.testing.assert_allclose(got.probabilities.sum(axis=1), [1, 1])
        self.client.create_model("py-arrays-p", 2)
        self.assertIsNone(
            self.client.predict_arrays("py-arrays-p", X).probabilities)

    def test_prediction_and_feedback_streams(self):
        self.client.create_model("py-streams", 2)
        self.client.set_weights("py-streams", [1.0, -1.0])
        responses = list(self.client.predict_stream(
            "py-streams", [[[1, 0]], [[0, 1], [2, 2]], [[1, 2, 3]]],
            remember=True))
        self.assertEqual([[p.score for p in r.predictions]
                          for r in responses[:2]], [[1.0], [-1.0, 0.0]])
        self.assertEqual(responses[2].error.code,
                         grpc.StatusCode.INVALID_ARGUMENT.value[0])
        ids = [p.example_id for r in responses[:2] for p in r.predictions]
        answers = list(self.client.feedback_stream(
            "py-streams", [[(ids[0], -1)], [(ids[1], -1), (ids[2], 1)]]))
        # w = (1, -1): (1, 0) is -1 at M = -1, an update to w = (0, -1),
        # b = -1; then (0, 1) is -1 at M = 2, and (2, 2) +1 at M = -3.
        self.assertEqual([[r.updated for r in a.results] for a in answers],
                         [[True], [False, True]])

    def test_a_fan_out_trains_eagerly_into_totals_per_model(self):
        self.client.create_model("py-fan-a", 2)
        self.client.create_model("py-fan-b", 2, halfspace.perceptron(
            margin_threshold=10.0))
        totals = self.client.train(["py-fan-a", "py-fan-b"],
                                   [[1, 2], [2, 1], [1, 2]], [1, -1, 1])
        self.assertEqual(totals["py-fan-a"].updates, 2)
        self.assertEqual(totals["py-fan-b"].updates, 3)

    def test_the_exactly_once_trainer_survives_a_server_killed_mid_stream(self):
        with tempfile.TemporaryDirectory() as d:
            target = "unix:" + os.path.join(d, "restarted.sock")
            command = [os.environ["HALFSPACE_SERVER_BINARY"],
                       "--listen=" + target,
                       "--data_dir=" + os.path.join(d, "data"),
                       "--log_level=warn"]
            servers = [subprocess.Popen(command)]
            channel = grpc.insecure_channel(target)
            grpc.channel_ready_future(channel).result(timeout=30)
            channel.close()
            client = halfspace.Client(target, timeout=60)
            try:
                client.create_model("py-exact", 2)
                n = 20000
                twin = [([i % 5 - 2, i % 3 - 1], 1 if i % 4 < 2 else -1)
                        for i in range(n)]
                trainer = client.exactly_once("py-exact", "loader")
                self.assertEqual(trainer.last_applied, 0)
                trainer.train(twin[:1000])

                def restart():
                    servers[0].kill()  # kill -9, mid-stream or between
                    servers[0].wait()
                    threading.Event().wait(0.5)
                    servers.append(subprocess.Popen(command))

                killer = threading.Timer(0.1, restart)
                killer.start()
                totals = trainer.train(twin[1000:], batch_size=100)
                killer.join()
                # What a failed attempt had applied came back as duplicates.
                self.assertEqual(totals.examples + totals.duplicates, n - 1000)
                self.assertEqual(trainer.last_applied, n)
                again = client.exactly_once("py-exact", "loader")
                self.assertEqual(again.last_applied, n)
                model = client.get_model("py-exact")
                self.assertEqual(model.stats.examples_seen, n)
                # The very weights a twin that was never interrupted has.
                client.create_model("py-exact-twin", 2)
                client.train("py-exact-twin", twin)
                exact, twin_weights = (client.get_weights(m) for m in
                                       ("py-exact", "py-exact-twin"))
                self.assertEqual((exact.weights, exact.bias),
                                 (twin_weights.weights, twin_weights.bias))
            finally:
                client.close()
                for server in servers:
                    server.kill()
                    server.wait()

    def test_models_are_listed_and_deleted(self):
        self.client.create_model("py-listed", dimension=1)
        self.assertIn("py-listed",
                      [m.name for m in self.client.list_models()])
        self.client.delete_model("py-listed")
        self.assertNotIn("py-listed",
                         [m.name for m in self.client.list_models()])


if __name__ == "__main__":
    unittest.main()
