"""The Python package as a user installs it: built by pip from
client/python, installed into fresh virtual environments (with system site
packages: Debian's python3-grpcio and python3-protobuf satisfy its
dependencies, and nothing comes from the network), and talking to a real
server from there. Also: the committed generated modules are what
generate.py writes today, and the package's protos coexist with the
googleapis-common-protos and grpcio-health-checking modules of the same
protos.

Run by ctest with HALFSPACE_SERVER_BINARY, HALFSPACE_VERSION (the C++
project's), HALFSPACE_PROTOC and HALFSPACE_GRPC_PYTHON_PLUGIN set.
"""

import filecmp
import hashlib
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

SOURCE = pathlib.Path(__file__).resolve().parent.parent.parent
PACKAGE = SOURCE / "client" / "python"
sys.path.insert(0, str(PACKAGE))
import generate  # noqa: E402  (client/python/generate.py)
from server_process import ServerProcess  # noqa: E402

# Runs in an installed environment's python: the package's version, where
# it was imported from, and a model trained and asked through a server.
SESSION = """
import sys
import halfspace
client = halfspace.Client(sys.argv[1])
client.create_model(sys.argv[2], dimension=2)
results = list(client.train_stream(sys.argv[2], [([1, 2], 1), ([2, 1], -1)]))
[p] = client.predict(sys.argv[2], [[3, 0]])
print(halfspace.__version__, halfspace.__file__)
print([r.updated for r in results], p.label, p.score)
"""


def run(*command, **kwargs):
    """Runs `command`, failing with its output if it fails."""
    done = subprocess.run(command, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, **kwargs)
    if done.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s" % (
            " ".join(map(str, command)), done.returncode, done.stdout))
    return done.stdout


class Environment:
    """A fresh virtual environment with the system's site packages."""

    def __init__(self, directory):
        self.path = pathlib.Path(directory, "venv")
        run("/usr/bin/python3", "-m", "venv", "--system-site-packages",
            self.path)
        self.python = self.path / "bin" / "python"

    def pip(self, *args):
        # --no-index: everything it needs is here or in the system's site
        # packages; -q keeps the log short.
        return run(self.python, "-m", "pip", "-q", "--no-input",
                   "--disable-pip-version-check", *args, "--no-index",
                   cwd=self.path.parent)

    def session(self, target, model):
        """SESSION's two lines, run outside the source tree."""
        return run(self.python, "-c", SESSION, target, model,
                   cwd=self.path.parent, env=dict(os.environ,
                                                  PYTHONPATH="")).splitlines()


class PackageTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess()
        cls.target = cls.server.target
        cls.version = os.environ["HALFSPACE_VERSION"]

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def check_session(self, environment, model, installed_under):
        version_line, result_line = environment.session(self.target, model)
        version, where = version_line.split(" ", 1)
        self.assertEqual(version, self.version)
        self.assertTrue(where.startswith(str(installed_under)), where)
        # w = 0: both examples are mistakes; then w = (-1, 1), b = 0.
        self.assertEqual(result_line, "[True, True] -1 -3.0")

    def test_the_committed_generated_modules_are_what_generate_writes(self):
        with tempfile.TemporaryDirectory() as out:
            generate.generate(out, self.version,
                              os.environ["HALFSPACE_PROTOC"],
                              os.environ["HALFSPACE_GRPC_PYTHON_PLUGIN"],
                              "/usr/share/grpc-proto")
            written = sorted(p.relative_to(out)
                             for p in pathlib.Path(out).rglob("*.py"))
            self.assertIn(pathlib.Path("halfspace/v1/halfspace_pb2.py"),
                          written)
            stale = [str(p) for p in written
                     if not filecmp.cmp(pathlib.Path(out, p), PACKAGE / p,
                                        shallow=False)]
            self.assertEqual(stale, [], "run client/python/generate.py "
                             "--version=%s" % self.version)

    def test_a_wheel_built_by_pip_installs_and_talks_to_a_server(self):
        with tempfile.TemporaryDirectory() as d:
            environment = Environment(d)
            wheels = pathlib.Path(d, "wheels")
            environment.pip("wheel", "--no-deps", "-w", wheels, PACKAGE)
            [wheel] = wheels.glob("*.whl")
            self.assertEqual(wheel.name,
                             "halfspace-%s-py3-none-any.whl" % self.version)
            environment.pip("install", wheel)
            self.check_session(environment, "package-wheel", environment.path)
            # Only the package: no top-level google/ or grpc/ of its own.
            site = next(environment.path.glob("lib/python3*/site-packages"))
            self.assertFalse((site / "google").exists())
            self.assertFalse((site / "grpc").exists())

    def test_pip_installs_the_folder(self):
        with tempfile.TemporaryDirectory() as d:
            environment = Environment(d)
            environment.pip("install", PACKAGE)
            self.check_session(environment, "package-folder", environment.path)

    def test_the_source_distribution_builds_and_installs(self):
        with tempfile.TemporaryDirectory() as d:
            sys.path.insert(0, str(PACKAGE / "build_backend"))
            try:
                import halfspace_build
            finally:
                sys.path.pop(0)
            name = halfspace_build.build_sdist(d)
            self.assertEqual(name, "halfspace-%s.tar.gz" % self.version)
            environment = Environment(d)
            environment.pip("install", pathlib.Path(d, name))
            self.check_session(environment, "package-sdist", environment.path)

    def test_an_editable_install_imports_the_tree(self):
        with tempfile.TemporaryDirectory() as d:
            environment = Environment(d)
            environment.pip("install", "-e", PACKAGE)
            self.check_session(environment, "package-editable", PACKAGE)

    def test_wheels_are_reproducible(self):
        digests = []
        with tempfile.TemporaryDirectory() as d:
            environment = Environment(d)
            for i in range(2):
                wheels = pathlib.Path(d, "wheels%d" % i)
                environment.pip("wheel", "--no-deps", "-w", wheels, PACKAGE)
                [wheel] = wheels.glob("*.whl")
                digests.append(hashlib.sha256(wheel.read_bytes()).hexdigest())
        self.assertEqual(digests[0], digests[1])

    def test_its_protos_coexist_with_other_packages_of_the_same_protos(self):
        # Modules generated as googleapis-common-protos and
        # grpcio-health-checking generate them, loaded from their own
        # place, and the package's: both register the same descriptors.
        script = """
import importlib.util, pathlib, sys
def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
root = pathlib.Path(sys.argv[1])
theirs = load("their_status", root / "google/rpc/status_pb2.py")
their_health = load("their_health", root / "grpc/health/v1/health_pb2.py")
from halfspace.std import health_pb2, status_pb2
from halfspace.v1 import halfspace_pb2
ours = status_pb2.Status(code=3, message="m")
assert theirs.Status.FromString(ours.SerializeToString()).message == "m"
assert their_health.HealthCheckRequest.DESCRIPTOR.full_name == \\
    health_pb2.HealthCheckRequest.DESCRIPTOR.full_name
result = halfspace_pb2.ExampleResult()
result.error.CopyFrom(ours)
print(result.error.code)
"""
        with tempfile.TemporaryDirectory() as d:
            for root, proto in ((SOURCE / "proto", "google/rpc/status.proto"),
                                ("/usr/share/grpc-proto",
                                 "grpc/health/v1/health.proto")):
                run(os.environ["HALFSPACE_PROTOC"], "--proto_path=%s" % root,
                    "--python_out=" + d, os.path.join(root, proto))
            output = run("/usr/bin/python3", "-c", script, d,
                         env=dict(os.environ, PYTHONPATH=str(PACKAGE)))
            self.assertEqual(output, "3\n")


if __name__ == "__main__":
    unittest.main()
