"""A halfspace server process for the Python tests: started on a Unix
socket in a temporary directory of its own, ready before it is returned,
from the binary HALFSPACE_SERVER_BINARY names.

    with ServerProcess("--log_level=warn") as server:
        client = halfspace.Client(server.target)
"""

import os
import subprocess
import tempfile

import grpc


class ServerProcess:
    """The server, its target ("unix:PATH") and its log in its directory."""

    def __init__(self, *flags, wait=True):
        self.dir = tempfile.TemporaryDirectory()
        self.target = "unix:" + os.path.join(self.dir.name, "halfspace.sock")
        self.log = open(os.path.join(self.dir.name, "server.log"), "w")
        self.process = subprocess.Popen(
            [os.environ["HALFSPACE_SERVER_BINARY"], "--listen=" + self.target,
             "--data_dir=" + os.path.join(self.dir.name, "data"), *flags],
            stdout=self.log, stderr=subprocess.STDOUT)
        if not wait:  # e.g. TLS: the caller knows when it is ready
            return
        channel = grpc.insecure_channel(self.target)
        try:
            grpc.channel_ready_future(channel).result(timeout=30)
        except grpc.FutureTimeoutError:
            self.stop()
            raise
        finally:
            channel.close()

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()
        self.dir.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
