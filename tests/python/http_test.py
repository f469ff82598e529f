"""JSON over HTTP (--http_listen) against a real server, with the standard
library's HTTP client and raw sockets: every kind of route, the errors and
their statuses, tokens, TLS, the bounds on bodies and slow clients, and
training over HTTP learning exactly what the same examples learn over
gRPC.

    HALFSPACE_SERVER_BINARY=build/halfspace-server PYTHONPATH=client/python \\
        python3 tests/python/http_test.py
"""

import http.client
import json
import os
import re
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import unittest

import halfspace
from server_process import ServerProcess


def http_port(server, timeout=30):
    """The port the server's log says it serves HTTP on."""
    deadline = time.time() + timeout
    path = os.path.join(server.dir.name, "server.log")
    while time.time() < deadline:
        with open(path) as log:
            found = re.search(r"JSON over HTTP on \S+ \(port (\d+)\)",
                              log.read())
        if found:
            return int(found.group(1))
        time.sleep(0.05)
    raise AssertionError("the server did not say its HTTP port")


class Http:
    """Requests to one server, each on a connection of its own."""

    def __init__(self, port, token=None, context=None):
        self.port = port
        self.token = token
        self.context = context

    def connection(self):
        if self.context is not None:
            return http.client.HTTPSConnection("127.0.0.1", self.port,
                                               context=self.context,
                                               timeout=30)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def call(self, method, path, body=None, headers=None):
        """(status, headers, body text)."""
        c = self.connection()
        headers = dict(headers or {})
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        text = r.read().decode()
        c.close()
        return r.status, r.headers, text

    def json(self, method, path, body=None, expect=200):
        status, _, text = self.call(method, path, body)
        if status != expect:
            raise AssertionError("%s %s: %d %s" % (method, path, status, text))
        return json.loads(text)


def create(h, name, dimension=2, **algorithm):
    return h.json("POST", "/v1/models", {
        "model": name, "dimension": str(dimension),
        "algorithm": algorithm or {"perceptron": {}}})


EXAMPLES = [([1.0, 2.0], 1), ([-1.5, 0.5], -1), ([0.25, -3.0], -1),
            ([2.0, 2.0], 1), ([-0.5, -0.5], 1), ([3.0, -1.0], -1)]


def train_lines(examples, per_line=2):
    lines = []
    for i in range(0, len(examples), per_line):
        lines.append(json.dumps({"examples": [
            {"features": {"dense": x}, "label": y}
            for x, y in examples[i:i + per_line]]}))
    return "\n".join(lines) + "\n"


class HttpTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess("--http_listen=127.0.0.1:0",
                                   "--http_max_body_bytes=65536",
                                   "--http_timeout=6s", "--log_level=info")
        cls.http = Http(http_port(cls.server))
        cls.client = halfspace.Client(cls.server.target)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.stop()

    def test_model_routes(self):
        h = self.http
        made = create(h, "routes", dimension=3, sgd={"loss": "LOSS_LOG"})
        self.assertEqual(made["model"]["name"], "routes")
        self.assertEqual(made["model"]["dimension"], "3")
        got = h.json("GET", "/v1/models/routes")
        self.assertEqual(got["model"]["algorithm"]["sgd"]["loss"], "LOSS_LOG")
        status, _, text = h.call("POST", "/v1/models", {
            "model": "routes", "dimension": "3",
            "algorithm": {"perceptron": {}}})
        self.assertEqual(status, 409)
        self.assertEqual(json.loads(text)["code"], 6)  # ALREADY_EXISTS
        create(h, "routes-2")
        listed = h.json("GET", "/v1/models?pageSize=1&view=MODEL_VIEW_NAME")
        self.assertEqual(len(listed["models"]), 1)
        self.assertTrue(listed["nextPageToken"])
        self.assertEqual(h.json("DELETE", "/v1/models/routes-2"), {})
        status, _, text = h.call("GET", "/v1/models/routes-2")
        self.assertEqual(status, 404)
        error = json.loads(text)
        self.assertEqual(error["code"], 5)
        self.assertIn("routes-2", error["message"])

    def test_predict_and_weights(self):
        h = self.http
        create(h, "predict")
        h.json("PUT", "/v1/models/predict/weights",
               {"weights": [0.5, -2.0], "bias": 0.25})
        weights = h.json("GET", "/v1/models/predict/weights")
        self.assertEqual(weights["weights"], [0.5, -2.0])
        self.assertEqual(weights["bias"], 0.25)
        answer = h.json("POST", "/v1/models/predict:predict", {
            "instances": [{"dense": [1.0, 1.0]}, {"dense": [2.0, 0.0]}]})
        scores = [p["score"] for p in answer["predictions"]]
        self.assertEqual(scores, [0.5 - 2.0 + 0.25, 1.0 + 0.25])
        self.assertEqual([p["label"] for p in answer["predictions"]], [-1, 1])

    def test_train_streams_results_and_learns_as_grpc_does(self):
        h = self.http
        create(h, "over-http", averaged_perceptron={})
        self.client.create_model("over-grpc", 2,
                                 halfspace.averaged_perceptron())
        status, headers, text = h.call("POST", "/v1/models/over-http:train",
                                       train_lines(EXAMPLES))
        self.assertEqual(status, 200, text)
        self.assertEqual(headers["Content-Type"], "application/x-ndjson")
        lines = [json.loads(line) for line in text.splitlines()]
        self.assertEqual(len(lines), 3)
        results = [r for line in lines for r in line["result"]["results"]]
        self.assertEqual(len(results), len(EXAMPLES))
        self.client.train("over-grpc", [x for x, _ in EXAMPLES],
                          [y for _, y in EXAMPLES])
        over_grpc = self.client.get_weights("over-grpc")
        over_http = h.json("GET", "/v1/models/over-http/weights")
        self.assertEqual(over_http["weights"], list(over_grpc.weights))
        self.assertEqual(over_http["bias"], over_grpc.bias)
        # A bad example is answered in its result; the others learn.
        status, _, text = h.call(
            "POST", "/v1/models/over-http:train",
            json.dumps({"examples": [
                {"features": {"dense": [1.0]}, "label": 1},
                {"features": {"dense": [1.0, 1.0]}, "label": 1}]}))
        self.assertEqual(status, 200, text)
        summary = json.loads(text.splitlines()[0])["result"]
        self.assertTrue(any("error" in r and r["error"]["code"] == 3
                            for r in summary["results"]) or
                        summary.get("errors"), text)

    def test_stream_errors(self):
        h = self.http
        # An unknown model: the call's error, with its status, not a stream.
        status, headers, text = h.call("POST", "/v1/models/nobody:train",
                                       train_lines(EXAMPLES))
        self.assertEqual(status, 404, text)
        self.assertEqual(json.loads(text)["code"], 5)
        # A line that is not JSON: nothing is sent, the line is named.
        create(h, "stream-errors")
        status, _, text = h.call("POST", "/v1/models/stream-errors:train",
                                 train_lines(EXAMPLES) + "{not json\n")
        self.assertEqual(status, 400)
        self.assertIn("line 4", json.loads(text)["message"])
        self.assertEqual(self.client.get_model("stream-errors")
                         .stats.examples_seen, 0)

    def test_evaluate_is_one_answer(self):
        h = self.http
        create(h, "evaluated")
        h.json("PUT", "/v1/models/evaluated/weights",
               {"weights": [1.0, 0.0], "bias": 0.0})
        status, headers, text = h.call(
            "POST", "/v1/models/evaluated:evaluate", train_lines(EXAMPLES))
        self.assertEqual(status, 200, text)
        self.assertEqual(headers["Content-Type"], "application/json")
        answer = json.loads(text)
        self.assertEqual(answer["examples"], "6")
        # x0 >= 0 predicts +1: right on examples 0, 1, 3; wrong on 2, 4, 5.
        self.assertAlmostEqual(answer["accuracy"], 0.5)

    def test_malformed_and_wrongly_typed_bodies(self):
        h = self.http
        create(h, "typed")
        cases = [
            ("POST", "/v1/models", "{", "JSON"),
            ("POST", "/v1/models", '{"model": "x", "dimension": "two"}',
             "dimension"),
            ("POST", "/v1/models", '{"model": "x", "nonsense": 1}',
             "nonsense"),
            ("POST", "/v1/models/typed:predict",
             '{"instances": "not a list"}', "instances"),
            ("POST", "/v1/models/typed:predict",
             '{"model": "other", "instances": []}', "the path says"),
            ("POST", "/v1/models/typed:predict?top_k=1",
             '{"instances": []}', "query string"),
            ("GET", "/v1/models?pageSize=many", None, "pageSize"),
            ("GET", "/v1/models/typed", '{"model": "typed"}', "no body"),
            ("GET", "/v1/models/ty%zzped", None, "percent"),
        ]
        for method, path, body, says in cases:
            with self.subTest(path=path, body=body):
                status, _, text = h.call(method, path, body)
                self.assertEqual(status, 400, text)
                error = json.loads(text)
                self.assertEqual(error["code"], 3)
                self.assertIn(says, error["message"])

    def test_unknown_routes_and_methods(self):
        h = self.http
        status, _, text = h.call("GET", "/v9/nothing")
        self.assertEqual(status, 404)
        self.assertEqual(json.loads(text)["code"], 5)
        status, headers, text = h.call("PATCH", "/v1/models")
        self.assertEqual(status, 405)
        self.assertEqual(headers["Allow"], "POST, GET")
        self.assertEqual(json.loads(text)["code"], 12)

    def test_keep_alive_serves_many_requests(self):
        c = self.http.connection()
        for _ in range(5):
            c.request("GET", "/v1/stats")
            r = c.getresponse()
            self.assertEqual(r.status, 200)
            json.loads(r.read())
        c.close()

    def test_a_body_past_the_limit_is_refused_before_it_is_read(self):
        with socket.create_connection(("127.0.0.1", self.http.port)) as s:
            s.sendall(b"POST /v1/models HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Length: 10000000\r\n\r\n")
            s.settimeout(10)
            answer = s.recv(65536).decode()
        self.assertTrue(answer.startswith("HTTP/1.1 413"), answer)
        self.assertIn('"code":8', answer)
        # A chunked body that grows past it is cut off too.
        with socket.create_connection(("127.0.0.1", self.http.port)) as s:
            s.sendall(b"POST /v1/models HTTP/1.1\r\nHost: x\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n")
            chunk = b"x" * 40000
            for _ in range(2):
                s.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            s.settimeout(10)
            answer = s.recv(65536).decode()
        self.assertTrue(answer.startswith("HTTP/1.1 413"), answer)

    def test_a_slow_client_is_cut_off_and_holds_no_thread(self):
        slow = []
        for _ in range(8):  # more than the server has threads
            s = socket.create_connection(("127.0.0.1", self.http.port))
            s.sendall(b"POST /v1/models HTTP/1.1\r\nHost: x\r\n")
            slow.append(s)
        # While they dribble, others are served at once.
        started = time.time()
        self.assertEqual(self.http.call("GET", "/v1/stats")[0], 200)
        self.assertLess(time.time() - started, 4)
        # One byte a second: the request is not whole within --http_timeout
        # (6 s), and the connection ends.
        ended = []

        def dribble(s):
            opened = time.time()
            try:
                for byte in b"Content-Length: 2\r\n\r\n{}":
                    s.sendall(bytes([byte]))
                    time.sleep(1)
                s.settimeout(10)
                data = s.recv(65536)
            except OSError:
                data = b""
            ended.append((data, time.time() - opened))

        threads = [threading.Thread(target=dribble, args=(s,)) for s in slow]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for s in slow:
            s.close()
        self.assertEqual(len(ended), len(slow))
        for data, seconds in ended:
            self.assertEqual(data, b"")
            self.assertLess(seconds, 15)

    def test_expect_continue(self):
        body = json.dumps({"model": "continued", "dimension": "2",
                           "algorithm": {"perceptron": {}}}).encode()
        with socket.create_connection(("127.0.0.1", self.http.port)) as s:
            s.sendall(b"POST /v1/models HTTP/1.1\r\nHost: x\r\n"
                      b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n"
                      % len(body))
            s.settimeout(10)
            self.assertTrue(s.recv(64).startswith(b"HTTP/1.1 100"))
            s.sendall(body)
            answer = s.recv(65536).decode()
        self.assertTrue(answer.startswith("HTTP/1.1 200"), answer)



def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpServerTest(unittest.TestCase):
    """The gateway's connection limit, metrics and drain, each on a server
    of its own."""

    def test_connections_past_the_limit_are_answered_503(self):
        with ServerProcess("--http_listen=127.0.0.1:0",
                           "--http_max_connections=2") as server:
            port = http_port(server)
            held = [socket.create_connection(("127.0.0.1", port))
                    for _ in range(2)]
            time.sleep(0.2)
            status, _, text = Http(port).call("GET", "/v1/models")
            self.assertEqual(status, 503, text)
            self.assertIn("--http_max_connections=2",
                          json.loads(text)["message"])
            for s in held:
                s.close()
            deadline = time.time() + 10
            while Http(port).call("GET", "/v1/models")[0] != 200:
                self.assertLess(time.time(), deadline)
                time.sleep(0.05)

    def test_metrics_count_answers_by_status(self):
        metrics = free_port()
        with ServerProcess("--http_listen=127.0.0.1:0",
                           "--metrics_listen=127.0.0.1:%d" % metrics) as server:
            h = Http(http_port(server))
            h.call("GET", "/v1/models")
            h.call("GET", "/v1/models/nobody")
            h.call("GET", "/v1/models/nobody")
            expected = [
                'halfspace_http_responses_total{code="200"} 1',
                'halfspace_http_responses_total{code="404"} 2',
                # The calls are gRPC's too, by RPC and status.
                'halfspace_rpc_duration_seconds_count{code="NOT_FOUND",'
                'method="GetModel"} 2']
            # A call is counted as it ends, which may be just after its
            # answer reached the client.
            deadline = time.time() + 10
            while True:
                c = http.client.HTTPConnection("127.0.0.1", metrics,
                                               timeout=10)
                c.request("GET", "/metrics")
                text = c.getresponse().read().decode()
                c.close()
                missing = [line for line in expected if line not in text]
                if not missing or time.time() > deadline:
                    break
                time.sleep(0.05)
            self.assertEqual(missing, [], text)

    def test_sigterm_closes_idle_connections_and_stops(self):
        server = ServerProcess("--http_listen=127.0.0.1:0")
        try:
            port = http_port(server)
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", "/v1/models")  # kept alive afterwards
            self.assertEqual(c.getresponse().read(), b"{}\n")
            started = time.time()
            server.process.terminate()
            self.assertEqual(server.process.wait(timeout=30), 0)
            self.assertLess(time.time() - started, 10)
            c.close()
        finally:
            server.process.kill()
            server.process.wait()
            server.log.close()
            server.dir.cleanup()


class HttpSecurityTest(unittest.TestCase):
    """Tokens, rate limits and TLS: the same as gRPC's."""

    def test_tokens(self):
        with tempfile.TemporaryDirectory() as d:
            tokens = os.path.join(d, "tokens")
            with open(tokens, "w") as f:
                f.write("admin-token-0123456789 admin:*\n"
                        "reader-token-0123456789 predict:*\n")
            with ServerProcess("--http_listen=127.0.0.1:0",
                               "--tokens_file=" + tokens) as server:
                port = http_port(server)
                status, headers, text = Http(port).call("GET", "/v1/models")
                self.assertEqual(status, 401, text)
                self.assertEqual(json.loads(text)["code"], 16)
                self.assertEqual(headers["WWW-Authenticate"], "Bearer")
                status, _, _ = Http(port, "wrong-token-0123456789").call(
                    "GET", "/v1/models")
                self.assertEqual(status, 401)
                admin = Http(port, "admin-token-0123456789")
                create(admin, "guarded")
                reader = Http(port, "reader-token-0123456789")
                self.assertEqual(reader.json("GET", "/v1/models/guarded")
                                 ["model"]["name"], "guarded")
                status, _, text = reader.call(
                    "POST", "/v1/models/guarded:train", train_lines(EXAMPLES))
                self.assertEqual(status, 403, text)
                self.assertEqual(json.loads(text)["code"], 7)

    def test_rate_limits_count_the_http_client(self):
        with ServerProcess("--http_listen=127.0.0.1:0",
                           "--anonymous_calls_per_second=0.01",
                           "--anonymous_calls_burst=2") as server:
            h = Http(http_port(server))
            statuses = []
            for _ in range(3):
                status, headers, text = h.call("GET", "/v1/models")
                statuses.append(status)
            self.assertEqual(statuses, [200, 200, 429])
            self.assertGreaterEqual(int(headers["Retry-After"]), 1)
            # The HTTP client's address, not the in-process channel's.
            self.assertIn("client ipv4:127.0.0.1", json.loads(text)["message"])

    def test_tls(self):
        with tempfile.TemporaryDirectory() as d:
            def run(*args):
                subprocess.run(args, check=True, cwd=d,
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                "-subj", "/CN=localhost", "-addext",
                "subjectAltName=IP:127.0.0.1", "-keyout", "key.pem",
                "-out", "cert.pem")
            with ServerProcess("--http_listen=127.0.0.1:0",
                               "--tls_cert=" + os.path.join(d, "cert.pem"),
                               "--tls_key=" + os.path.join(d, "key.pem"),
                               "--log_level=info", wait=False) as server:
                port = http_port(server)
                context = ssl.create_default_context(
                    cafile=os.path.join(d, "cert.pem"))
                h = Http(port, context=context)
                create(h, "over-tls")
                self.assertEqual(h.json("GET", "/v1/models/over-tls")
                                 ["model"]["name"], "over-tls")
                # Plain HTTP to a TLS port gets no answer.
                status = None
                try:
                    status = Http(port).call("GET", "/v1/models")[0]
                except (http.client.HTTPException, OSError):
                    pass
                self.assertIsNone(status)


if __name__ == "__main__":
    unittest.main()
