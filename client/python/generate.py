"""Writes the package's generated modules: the messages and stubs protoc
makes from proto/ and from gRPC's health and reflection protos, and
halfspace/_version.py with the project's version. They are committed, so
that the package installs without protoc or the C++ build; the test
PythonPackageGenerated runs this into a temporary directory and fails if
what is committed differs.

    python3 client/python/generate.py --version=X.Y.Z [--out=client/python]
        [--protoc=protoc] [--grpc_python_plugin=grpc_python_plugin]
        [--grpc_protos=/usr/share/grpc-proto]

Every module lands in the package: halfspace.v1 for the API, halfspace.std
for google.rpc.Status and gRPC's health and reflection services, never a
top-level google/ or grpc/ that would hide or be hidden by the packages of
those names. The protos keep their own file names (google/rpc/status.proto,
grpc/health/v1/health.proto), so the descriptors match the ones
googleapis-common-protos and grpcio-health-checking register, and a program
may import both.
"""

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
PROTO_ROOT = HERE.parent.parent / "proto"

# (proto root, proto file, the package its modules move to); None: the
# root given by --grpc_protos.
PROTOS = [
    (PROTO_ROOT, "halfspace/v1/halfspace.proto", "halfspace.v1"),
    (PROTO_ROOT, "google/rpc/status.proto", "halfspace.std"),
    (PROTO_ROOT, "google/api/http.proto", "halfspace.std"),
    (PROTO_ROOT, "google/api/annotations.proto", "halfspace.std"),
    (None, "grpc/health/v1/health.proto", "halfspace.std"),
    (None, "grpc/reflection/v1alpha/reflection.proto", "halfspace.std"),
]

VERSION = '''"""The version of the halfspace package: the C++ project's, written by
generate.py from CMakeLists.txt."""

__version__ = "{}"
'''


def module_of(proto, suffix):
    """The module protoc names for `proto` ("a/b/c.proto" -> "a.b.c_pb2")."""
    return proto[:-len(".proto")].replace("/", ".") + suffix


def renames():
    """{module protoc writes: module in the package}, for every module."""
    moves = {}
    for _, proto, package in PROTOS:
        for suffix in ("_pb2", "_pb2_grpc"):
            old = module_of(proto, suffix)
            moves[old] = package + "." + old.rsplit(".", 1)[1]
    return moves


def rewrite(text, moves):
    """`text` with every import of, and every name of, a moved module
    changed to its place in the package."""
    for old, new in moves.items():
        old_package, old_name = old.rsplit(".", 1)
        new_package, new_name = new.rsplit(".", 1)
        text = re.sub(r"^from %s import %s\b" % (re.escape(old_package),
                                                 re.escape(old_name)),
                      "from %s import %s" % (new_package, new_name), text,
                      flags=re.M)
        text = text.replace("'%s'" % old, "'%s'" % new)
    return text


def generate(out, version, protoc, plugin, grpc_protos):
    moves = renames()
    with tempfile.TemporaryDirectory() as raw:
        for root, proto, _ in PROTOS:
            root = root or grpc_protos
            subprocess.run(
                [protoc, "--proto_path=%s" % root, "--python_out=" + raw,
                 "--grpc_python_out=" + raw,
                 "--plugin=protoc-gen-grpc_python=" + plugin,
                 os.path.join(root, proto)], check=True)
        for old, new in moves.items():
            source = pathlib.Path(raw, *old.split(".")).with_suffix(".py")
            text = source.read_text()
            if old.endswith("_grpc") and "class " not in text:
                continue  # a proto without services: nothing to call
            target = pathlib.Path(out, *new.split(".")).with_suffix(".py")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(rewrite(text, moves))
    pathlib.Path(out, "halfspace", "_version.py").write_text(
        VERSION.format(version))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", required=True)
    parser.add_argument("--out", default=str(HERE))
    parser.add_argument("--protoc", default="protoc")
    parser.add_argument("--grpc_python_plugin",
                        default=shutil.which("grpc_python_plugin") or
                        "grpc_python_plugin")
    parser.add_argument("--grpc_protos", default="/usr/share/grpc-proto")
    args = parser.parse_args()
    generate(args.out, args.version, args.protoc, args.grpc_python_plugin,
             args.grpc_protos)
    return 0


if __name__ == "__main__":
    sys.exit(main())
