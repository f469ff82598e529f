"""The Open Inference Protocol (KServe's v2) against a real server, by a
client written from the protocol's specification: its REST form with the
standard library's HTTP client, its gRPC form with stubs protoc makes here
from the specification's proto (proto/inference/grpc_predict_v2.proto
keeps its names and numbers). The predictions must be Predict's, to the
bit.

    HALFSPACE_SERVER_BINARY=build/halfspace-server PYTHONPATH=client/python \\
        HALFSPACE_PROTOC=protoc HALFSPACE_GRPC_PYTHON_PLUGIN=grpc_python_plugin \\
        python3 tests/python/open_inference_test.py
"""

import http.client
import importlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

import grpc

import halfspace
from halfspace.v1 import halfspace_pb2 as v1
from http_test import http_port
from server_process import ServerProcess

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def v2_stubs(directory):
    """The specification's messages and stubs, made by protoc."""
    proto_root = os.path.join(SOURCE, "proto")
    subprocess.run(
        [os.environ.get("HALFSPACE_PROTOC", "protoc"),
         "--proto_path=" + proto_root, "--python_out=" + directory,
         "--grpc_python_out=" + directory,
         "--plugin=protoc-gen-grpc_python=" +
         os.environ.get("HALFSPACE_GRPC_PYTHON_PLUGIN", "grpc_python_plugin"),
         os.path.join(proto_root, "inference", "grpc_predict_v2.proto")],
        check=True)
    sys.path.insert(0, directory)
    return (importlib.import_module("inference.grpc_predict_v2_pb2"),
            importlib.import_module("inference.grpc_predict_v2_pb2_grpc"))


X = [[1.0, 2.0], [3.0, 0.5], [-0.25, 4.0]]


class OpenInferenceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stub_dir = tempfile.TemporaryDirectory()
        cls.pb, cls.pb_grpc = v2_stubs(cls.stub_dir.name)
        cls.server = ServerProcess("--http_listen=127.0.0.1:0")
        cls.port = http_port(cls.server)
        cls.client = halfspace.Client(cls.server.target)
        cls.client.create_model("logit", 2, halfspace.logistic_regression())
        cls.client.set_weights("logit", [0.75, -1.5], 0.125)
        cls.client.create_model("classes", 2, "softmax_regression",
                                classes=["a", "b", "c"])
        cls.client.train("classes", X, ["a", "b", "c"])
        cls.channel = grpc.insecure_channel(cls.server.target)
        cls.grpc = cls.pb_grpc.GRPCInferenceServiceStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.client.close()
        cls.server.stop()
        cls.stub_dir.cleanup()

    def rest(self, method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        c.request(method, path, body=None if body is None else json.dumps(body))
        r = c.getresponse()
        text = r.read().decode()
        c.close()
        return r.status, json.loads(text) if text else None

    def predicted(self, model):
        return self.client._stub.Predict(v1.PredictRequest(
            model=model, instances=[v1.FeatureVector(dense=x)
                                    for x in X])).predictions

    # REST

    def test_rest_health_and_metadata(self):
        self.assertEqual(self.rest("GET", "/v2/health/live"),
                         (200, {"live": True}))
        self.assertEqual(self.rest("GET", "/v2/health/ready"),
                         (200, {"ready": True}))
        status, server = self.rest("GET", "/v2")
        self.assertEqual(status, 200)
        self.assertEqual(server["name"], "halfspace")
        self.assertEqual(server["version"], halfspace.__version__)
        self.assertEqual(self.rest("GET", "/v2/models/logit/ready"),
                         (200, {"ready": True}))
        self.assertEqual(self.rest("GET", "/v2/models/nobody/ready")[0], 400)
        status, meta = self.rest("GET", "/v2/models/logit")
        self.assertEqual(status, 200)
        self.assertEqual(meta["inputs"], [
            {"name": "input", "datatype": "FP64", "shape": [-1, 2]}])
        self.assertEqual([(o["name"], o["datatype"], o["shape"])
                          for o in meta["outputs"]],
                         [("label", "INT32", [-1]), ("score", "FP64", [-1]),
                          ("probability", "FP64", [-1])])
        status, meta = self.rest("GET", "/v2/models/classes")
        self.assertEqual([(o["name"], o["datatype"], o["shape"])
                          for o in meta["outputs"]],
                         [("label", "BYTES", [-1]), ("scores", "FP64", [-1, 3]),
                          ("classes", "BYTES", [3]),
                          ("probabilities", "FP64", [-1, 3])])

    def test_rest_infer_is_predict(self):
        status, answer = self.rest("POST", "/v2/models/logit/infer", {
            "id": "req-1",
            "inputs": [{"name": "input", "shape": [3, 2], "datatype": "FP64",
                        "data": X}]})
        self.assertEqual(status, 200, answer)
        self.assertEqual(answer["model_name"], "logit")
        self.assertEqual(answer["id"], "req-1")
        outputs = {o["name"]: o for o in answer["outputs"]}
        p = self.predicted("logit")
        self.assertEqual(outputs["label"]["data"], [q.label for q in p])
        self.assertEqual(outputs["label"]["shape"], [3])
        self.assertEqual(outputs["score"]["data"], [q.score for q in p])
        self.assertEqual(outputs["probability"]["data"],
                         [q.probability for q in p])
        # Flat data, one output asked for.
        status, answer = self.rest("POST", "/v2/models/logit/infer", {
            "inputs": [{"name": "x", "shape": [3, 2], "datatype": "FP64",
                        "data": [v for row in X for v in row]}],
            "outputs": [{"name": "score"}]})
        self.assertEqual([o["name"] for o in answer["outputs"]], ["score"])
        self.assertEqual(answer["outputs"][0]["data"], [q.score for q in p])

    def test_rest_multiclass(self):
        status, answer = self.rest("POST", "/v2/models/classes/infer", {
            "inputs": [{"name": "input", "shape": [3, 2], "datatype": "FP64",
                        "data": X}]})
        self.assertEqual(status, 200, answer)
        outputs = {o["name"]: o for o in answer["outputs"]}
        p = self.predicted("classes")
        self.assertEqual(outputs["label"]["data"],
                         [q.predicted_class for q in p])
        self.assertEqual(outputs["classes"]["data"], ["a", "b", "c"])
        self.assertEqual(outputs["scores"]["shape"], [3, 3])
        self.assertEqual(outputs["scores"]["data"],
                         [c.score for q in p for c in q.class_scores])
        self.assertEqual(outputs["probabilities"]["data"],
                         [c.probability for q in p for c in q.class_scores])

    def test_rest_errors(self):
        cases = [
            ({"inputs": [{"name": "x", "shape": [2, 2], "datatype": "FP64",
                          "data": [1, 2, 3]}]}, 400, "4 elements"),
            ({"inputs": [{"name": "x", "shape": [1, 3], "datatype": "FP64",
                          "data": [1, 2, 3]}]}, 400, "dimension"),
            ({"inputs": [{"name": "x", "shape": [1, 2], "datatype": "BYTES",
                          "data": ["a", "b"]}]}, 400, "FP64"),
            ({"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP64",
                          "data": [1, 2]}], "outputs": [{"name": "nope"}]},
             400, "outputs are label, score, probability"),
            ({"input": []}, 400, "input"),
            ([1, 2], 400, "JSON object"),
        ]
        for body, code, says in cases:
            with self.subTest(body=body):
                status, answer = self.rest("POST", "/v2/models/logit/infer",
                                           body)
                self.assertEqual(status, code, answer)
                self.assertIn(says, answer["error"])
        status, answer = self.rest("POST", "/v2/models/nobody/infer", {
            "inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP64",
                        "data": [1, 2]}]})
        self.assertEqual(status, 404)
        status, answer = self.rest("POST", "/v2/models/logit/versions/7/infer",
                                   {"inputs": []})
        self.assertEqual(status, 404)
        self.assertIn("no versions", answer["error"])
        self.assertEqual(self.rest("GET", "/v2/models/logit/infer")[0], 405)
        self.assertEqual(self.rest("GET", "/v2/nothing")[0], 404)

    # gRPC

    def test_grpc_health_and_metadata(self):
        pb = self.pb
        self.assertTrue(self.grpc.ServerLive(pb.ServerLiveRequest()).live)
        self.assertTrue(self.grpc.ServerReady(pb.ServerReadyRequest()).ready)
        self.assertTrue(self.grpc.ModelReady(
            pb.ModelReadyRequest(name="logit")).ready)
        self.assertFalse(self.grpc.ModelReady(
            pb.ModelReadyRequest(name="nobody")).ready)
        meta = self.grpc.ServerMetadata(pb.ServerMetadataRequest())
        self.assertEqual((meta.name, meta.version),
                         ("halfspace", halfspace.__version__))
        model = self.grpc.ModelMetadata(pb.ModelMetadataRequest(name="logit"))
        self.assertEqual(model.inputs[0].datatype, "FP64")
        self.assertEqual(list(model.inputs[0].shape), [-1, 2])

    def test_grpc_infer_typed_and_raw(self):
        pb = self.pb
        p = self.predicted("logit")
        typed = pb.ModelInferRequest(model_name="logit", id="7")
        tensor = typed.inputs.add(name="input", datatype="FP64", shape=[3, 2])
        tensor.contents.fp64_contents.extend(v for row in X for v in row)
        answer = self.grpc.ModelInfer(typed)
        self.assertEqual(answer.id, "7")
        outputs = {o.name: o for o in answer.outputs}
        self.assertEqual(list(outputs["score"].contents.fp64_contents),
                         [q.score for q in p])
        self.assertEqual(list(outputs["label"].contents.int_contents),
                         [q.label for q in p])
        raw = pb.ModelInferRequest(model_name="logit")
        raw.inputs.add(name="input", datatype="FP64", shape=[3, 2])
        raw.raw_input_contents.append(
            struct.pack("<6d", *[v for row in X for v in row]))
        outputs = {o.name: o for o in self.grpc.ModelInfer(raw).outputs}
        self.assertEqual(list(outputs["probability"].contents.fp64_contents),
                         [q.probability for q in p])
        fp32 = pb.ModelInferRequest(model_name="logit")
        t = fp32.inputs.add(name="input", datatype="FP32", shape=[2])
        t.contents.fp32_contents.extend([1.0, 2.0])
        score = {o.name: o for o in self.grpc.ModelInfer(fp32).outputs}[
            "score"].contents.fp64_contents[0]
        self.assertEqual(score, 0.75 * 1.0 - 1.5 * 2.0 + 0.125)
        bad = pb.ModelInferRequest(model_name="logit")
        bad.inputs.add(name="input", datatype="FP64", shape=[3, 2])
        bad.raw_input_contents.append(b"\0" * 40)
        with self.assertRaises(grpc.RpcError) as e:
            self.grpc.ModelInfer(bad)
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)


class OpenInferenceTokensTest(unittest.TestCase):
    def test_tokens_apply(self):
        with tempfile.TemporaryDirectory() as d:
            stubs = os.path.join(d, "stubs")
            os.mkdir(stubs)
            pb, pb_grpc = v2_stubs(stubs)
            tokens = os.path.join(d, "tokens")
            with open(tokens, "w") as f:
                f.write("reader-token-0123456789 predict:open-*\n"
                        "admin-token-0123456789 admin:*\n")
            with ServerProcess("--tokens_file=" + tokens) as server:
                admin = halfspace.Client(server.target,
                                         token="admin-token-0123456789")
                admin.create_model("closed", 1)
                admin.close()
                channel = grpc.insecure_channel(server.target)
                stub = pb_grpc.GRPCInferenceServiceStub(channel)
                request = pb.ModelInferRequest(model_name="closed")
                t = request.inputs.add(name="input", datatype="FP64",
                                       shape=[1])
                t.contents.fp64_contents.append(1.0)
                with self.assertRaises(grpc.RpcError) as e:
                    stub.ModelInfer(request)
                self.assertEqual(e.exception.code(),
                                 grpc.StatusCode.UNAUTHENTICATED)
                with self.assertRaises(grpc.RpcError) as e:
                    stub.ModelInfer(request, metadata=[
                        ("authorization", "Bearer reader-token-0123456789")])
                self.assertEqual(e.exception.code(),
                                 grpc.StatusCode.PERMISSION_DENIED)
                # Liveness needs no token.
                self.assertTrue(stub.ServerLive(pb.ServerLiveRequest()).live)
                channel.close()


if __name__ == "__main__":
    unittest.main()
