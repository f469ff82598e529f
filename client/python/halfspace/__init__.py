"""halfspace's Python client: named online linear classifiers over gRPC.

    import halfspace

    with halfspace.Client("localhost:50051") as client:
        client.create_model("notes", dimension=2)
        for result in client.train("notes", [([1, 2], 1), ([2, 1], -1)]):
            print(result.score, result.updated)
        print(client.predict("notes", [[1, 2]])[0].label)

The messages are the generated ones of proto/halfspace/v1/halfspace.proto,
importable as halfspace.v1.halfspace_pb2.
"""

from halfspace._version import __version__
from halfspace.client import Client, example, features

__all__ = ["Client", "example", "features", "__version__"]
