"""Replays the README's ```console blocks, and its ```python programs
followed by what they print, and checks they print what it says.

Each block is a shell session: lines starting with "$ " are commands (a
line ending with \\ or | continues on the next), the lines after one are
what it prints, standard output and error as a terminal shows them. The blocks run in
README order, as one story, against one fresh server on a Unix socket
(HALFSPACE_SERVER points the CLI at it; its VW listener is on port
26542, JSON over HTTP on 8080), in a temporary directory where
build/ is the build directory and client/ the source tree's.

    python3 tests/readme_sessions.py README.md SERVER_BINARY BUILD_DIR
"""

import difflib
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


# A console block; or a Python program followed by what it prints (a
# block of no language after one blank line).
BLOCK = re.compile(r"^```console\n(.*?)^```|"
                   r"^```python\n((?:(?!```).)*)^```\n\n"
                   r"```\n((?:(?!```).)*)^```", re.S | re.M)


def sessions(readme):
    """The console blocks of `readme`, and its Python programs with what
    they print, in README order: lists of (command, expected lines). A
    program is run as one command, by Debian's python3 with the client
    from the tree."""
    result = []
    for match in BLOCK.finditer(readme):
        if match.group(1) is None:
            program, printed = match.group(2), match.group(3)
            command = ("PYTHONPATH=client/python python3 - <<'PROGRAM'\n" +
                       program + "PROGRAM")
            result.append([(command, printed.splitlines())])
            continue
        block = match.group(1)
        steps = []
        continued = False  # the last command line ended with \ or |
        for line in block.splitlines():
            if continued:
                steps[-1] = (steps[-1][0] + "\n" + line, [])
            elif line.startswith("$ "):
                steps.append((line[2:], []))
            elif steps:
                steps[-1][1].append(line)
            continued = bool(steps) and not steps[-1][1] and \
                line.rstrip().endswith(("\\", "|"))
        result.append(steps)
    return result


def ready(url):
    """Whether the server's readiness probe at url answers 200."""
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def main(readme_path, server_binary, build_dir):
    with open(readme_path) as f:
        blocks = sessions(f.read())
    if not blocks:
        print("no ```console blocks in", readme_path)
        return 1
    with tempfile.TemporaryDirectory() as work:
        os.symlink(os.path.abspath(build_dir), os.path.join(work, "build"))
        # The Python client, as the sessions import it from the tree.
        os.symlink(os.path.join(os.path.dirname(os.path.abspath(readme_path)),
                                "client"), os.path.join(work, "client"))
        socket = os.path.join(work, "halfspace.sock")
        with open(os.path.join(work, "server.log"), "w") as log:
            server = subprocess.Popen(
                [server_binary, "--listen=unix:" + socket,
                 "--vw_listen=127.0.0.1:26542",
                 "--http_listen=127.0.0.1:8080",
                 "--data_dir=" + os.path.join(work, "data")],
                stdout=log, stderr=subprocess.STDOUT)
        try:
            # The socket appears when the server listens; it serves once its
            # models have loaded, which its readiness probe reports.
            for _ in range(600):
                if ready("http://127.0.0.1:8080/v2/health/ready"):
                    break
                time.sleep(0.05)
            # Debian's python3 first: the one with python3-grpcio.
            env = dict(os.environ, HALFSPACE_SERVER="unix:" + socket,
                       PYTHONDONTWRITEBYTECODE="1",
                       PATH="/usr/bin:" + os.environ.get("PATH", ""))
            failures = 0
            steps = 0
            for block in blocks:
                for command, expected in block:
                    steps += 1
                    run = subprocess.run(["bash", "-c", command], cwd=work,
                                         env=env, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT,
                                         text=True, timeout=60)
                    got = run.stdout.splitlines()
                    if got != expected:
                        failures += 1
                        print("$ " + command)
                        sys.stdout.writelines(difflib.unified_diff(
                            [l + "\n" for l in expected],
                            [l + "\n" for l in got], "README", "printed"))
        finally:
            server.terminate()
            server.wait(timeout=30)
    print("%d of %d README commands printed what the README says" %
          (steps - failures, steps))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
