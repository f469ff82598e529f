"""A data directory an earlier release wrote loads and replays bit for bit.

tests/data/release_data_dir.tar holds the data directory a server left when
it was killed (kill -9) mid-work: model files (file format 2) from its last snapshot, one
model file of format 1, and a write-ahead log after the snapshot with
every kind of record that release wrote: training batches (tagged and
untagged), examples remembered for delayed feedback, and delayed feedback
logged as the TrainRequest it was rebuilt into (the record later releases
replaced with ids and labels). expected.json is what that server answered,
just before it was killed, for each model: its weights and bias, counters
and delayed-label numbers.

    python3 tests/release_data_dir_test.py check   # the test: this release
                                                   # recovers the directory
    python3 tests/release_data_dir_test.py make    # how the directory was
                                                   # made, with that release

Both take the server binary from HALFSPACE_SERVER_BINARY and the client
from PYTHONPATH (client/python).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile

import grpc

import halfspace
from halfspace.v1 import halfspace_pb2 as pb

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "release_data_dir.tar")
V1_MODEL = os.path.join(HERE, "data", "format_v1", "standardized.model")


def start(data_dir, sock):
    log = open(os.path.join(os.path.dirname(sock), "server.log"), "a")
    server = subprocess.Popen(
        [os.environ["HALFSPACE_SERVER_BINARY"], "--listen=unix:" + sock,
         "--data_dir=" + data_dir, "--durability=sync",
         "--snapshot_interval=1000000s", "--log_level=warn"],
        stdout=log, stderr=subprocess.STDOUT)
    channel = grpc.insecure_channel("unix:" + sock)
    grpc.channel_ready_future(channel).result(timeout=60)
    channel.close()
    return server, halfspace.Client("unix:" + sock)


# The model's numbers compared: all but those that count remembered
# examples past their deadline as of now (the test runs long after).
STATS = ("examples_seen", "updates", "mistakes", "average_loss",
         "weight_norm", "max_example_norm", "bias", "progressive_accuracy",
         "pending_remembered", "pending_joined", "pending_bytes",
         "window_examples", "window_accuracy", "window_loss")


def exact(v):
    return v.hex() if isinstance(v, float) else v


def state(client):
    """What the server says of every model, doubles exact (as hex)."""
    out = {}
    for model in client.list_models():
        weights = client._call(client._stub.GetWeights,
                               pb.GetWeightsRequest(model=model.name))
        out[model.name] = {
            "classes": list(model.classes),
            "weights": [w.hex() for w in weights.weights],
            "bias": weights.bias.hex(),
            "class_weights": [
                {"label": c.label, "weights": [w.hex() for w in c.weights],
                 "bias": c.bias.hex()} for c in weights.classes],
            "stats": {f: exact(getattr(model.stats, f)) for f in STATS},
        }
    return out


def points(n, d, seed):
    """n examples of dimension d, a fixed stream."""
    out, v = [], seed
    for i in range(n):
        x = []
        for _ in range(d):
            v = (v * 1103515245 + 12345) % 2**31
            x.append((v % 2001 - 1000) / 250.0)
        out.append((x, 1 if x[0] + 0.5 * x[-1] > 0.2 else -1))
    return out


def pack(data_dir, archive):
    """Writes data_dir to `archive`, its paths relative, in name order, and
    without times or owners: the same directory makes the same bytes."""
    def plain(info):
        info.mtime = 0
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mode = 0o755 if info.isdir() else 0o644
        return info
    with tarfile.open(archive, "w", format=tarfile.USTAR_FORMAT) as tar:
        for root, dirs, files in os.walk(data_dir):
            dirs.sort()
            for name in sorted(dirs) + sorted(files):
                path = os.path.join(root, name)
                tar.add(path, arcname=os.path.relpath(path, data_dir),
                        recursive=False, filter=plain)


def unpack(archive, data_dir):
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if not (member.isfile() or member.isdir()) or \
                    os.path.isabs(member.name) or ".." in member.name.split("/"):
                sys.exit(f"{archive}: unexpected member {member.name}")
        tar.extractall(data_dir)


def make():
    if os.path.exists(DATA):
        sys.exit(f"{DATA} exists; remove it first")
    with tempfile.TemporaryDirectory() as d:
        data_dir = os.path.join(d, "data")
        sock = os.path.join(d, "s.sock")
        server, client = start(data_dir, sock)
        client.create_model("clicks", 4, "logistic_regression",
                            learning_rate=0.1)
        client.create_model("animals", 3, "softmax_regression",
                            classes=["cat", "dog"])
        client.create_model("spam", 4, "passive_aggressive")
        list(client.train_stream("clicks", points(300, 4, 1), source="producer-1"))
        list(client.train_stream("spam", points(200, 4, 2)))
        list(client.train_stream("animals", [
            (x, "cat" if y > 0 else "dog") for x, y in points(100, 3, 3)]))
        client.close()
        server.send_signal(signal.SIGTERM)  # snapshots every model
        server.wait(timeout=60)
        # Format 1: a model file an older release wrote, loaded beside.
        shutil.copy(V1_MODEL, data_dir)

        server, client = start(data_dir, sock)
        # After the snapshot, only the log holds these.
        list(client.train_stream("clicks", points(120, 4, 4), source="producer-1",
                          first_sequence=301))
        for name, seed in (("clicks", 5), ("spam", 6)):
            stream = points(40, 4, seed)
            ids = [f"{name}-{i}" for i in range(len(stream))]
            client.predict(name, [x for x, _ in stream], remember=True,
                           example_ids=ids)
            labels = [(ids[i], y, 0.5 + i % 3) if i % 4 == 0 else (ids[i], y)
                      for i, (_, y) in enumerate(stream)]
            client.feedback(name, labels[:25])
            client.feedback(name, labels[20:] + [("never-remembered", 1)])
        animals = points(30, 3, 7)
        ids = [f"animal-{i}" for i in range(len(animals))]
        client.predict("animals", [x for x, _ in animals], remember=True,
                       example_ids=ids)
        client.feedback("animals", [
            (ids[i], "bird" if i % 5 == 0 else ("cat" if y > 0 else "dog"))
            for i, (_, y) in enumerate(animals)])
        list(client.train_stream("spam", points(50, 4, 8)))
        expected = state(client)
        client.close()
        server.kill()  # kill -9: the log is what recovery has
        server.wait()
        pack(data_dir, DATA)
    with open(os.path.join(DATA, "..", "release_data_dir.expected.json"),
              "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
    print(f"wrote {DATA}")


def check():
    with open(os.path.join(HERE, "data",
                           "release_data_dir.expected.json")) as f:
        expected = json.load(f)
    with tempfile.TemporaryDirectory() as d:
        data_dir = os.path.join(d, "data")
        unpack(DATA, data_dir)
        server, client = start(data_dir, os.path.join(d, "s.sock"))
        try:
            got = state(client)
        finally:
            client.close()
            server.terminate()
            server.wait(timeout=60)
    failures = 0
    for name in sorted(set(expected) | set(got)):
        if expected.get(name) != got.get(name):
            failures += 1
            print(f"model {name!r}: expected {expected.get(name)}\n"
                  f"  recovered {got.get(name)}")
    print(f"{len(expected)} models, {failures} differ")
    return 1 if failures else 0


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "check"
    if mode == "make":
        make()
    else:
        sys.exit(check())
