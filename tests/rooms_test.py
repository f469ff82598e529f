"""The rooms of core/ include only rooms below them.

core/'s rooms, lowest first, are ROOMS; a file in one may include files of
its own room and of the rooms before it, never of a room after it, nor a
file at core/'s top level (there are none). And server/ reaches the models
through the registry: it includes nothing of core/storage/ (the log, the
file formats, the lock), so that another journal or store fits without
touching it. Prints each include that breaks the order and fails.

    python3 tests/rooms_test.py [SOURCE_DIR]
"""

import pathlib
import re
import sys

ROOMS = ["base", "features", "algorithms", "monitors", "model", "training",
         "storage", "registry", "replication"]
INCLUDE = re.compile(r'^#include "core/([^"]+)"', re.MULTILINE)


def room_of(path):
    """The room of a path under core/ ("model/model.h" -> "model")."""
    parts = path.split("/")
    return parts[0] if len(parts) > 1 else None


def main():
    top = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    broken = []
    files = sorted((top / "core").rglob("*.h")) + sorted(
        (top / "core").rglob("*.cc"))
    for f in files:
        own = room_of(str(f.relative_to(top / "core")))
        if own not in ROOMS:
            broken.append(f"{f.relative_to(top)}: not in a room of {ROOMS}")
            continue
        for included in INCLUDE.findall(f.read_text()):
            room = room_of(included)
            if room not in ROOMS or ROOMS.index(room) > ROOMS.index(own):
                broken.append(f"{f.relative_to(top)} ({own}) includes "
                              f"core/{included} ({room}), a room above it")
    servers = sorted((top / "server").glob("*.h")) + sorted(
        (top / "server").glob("*.cc"))
    for f in servers:
        for included in INCLUDE.findall(f.read_text()):
            if room_of(included) == "storage":
                broken.append(f"{f.relative_to(top)} includes "
                              f"core/{included}: server/ reaches storage "
                              "through core/registry/")
    print(f"{len(files)} files of core/ and {len(servers)} of server/ read")
    for line in broken:
        print(line)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
