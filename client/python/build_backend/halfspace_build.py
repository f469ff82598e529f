"""The package's build backend (PEP 517, and PEP 660 for editable installs),
on the standard library alone: `pip install ./client/python` and
`pip wheel ./client/python` need no network and no build tools. The
package is pure Python, so a wheel is a zip of halfspace/ with the
metadata pyproject.toml gives (the core metadata specification, version
2.1) and a RECORD of every file's hash.

Archives are reproducible: every entry is dated SOURCE_DATE_EPOCH (or
1980-01-01) and listed in name order.
"""

import base64
import gzip
import hashlib
import io
import os
import pathlib
import re
import tarfile
import time
import zipfile

try:
    import tomllib
except ModuleNotFoundError:  # before Python 3.11
    tomllib = None

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = "halfspace"
TAG = "py3-none-any"


def _project():
    if tomllib is None:
        raise RuntimeError(
            "building halfspace needs Python 3.11 or later (for tomllib); "
            "the wheel it builds installs on Python 3.9 and later")
    with open(ROOT / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    text = (ROOT / PACKAGE / "_version.py").read_text()
    project["version"] = re.search(r'__version__ = "([^"]+)"', text).group(1)
    return project


def _metadata(project):
    """The METADATA (PKG-INFO) text of `project`."""
    lines = ["Metadata-Version: 2.1", "Name: " + project["name"],
             "Version: " + project["version"],
             "Summary: " + project["description"],
             "Requires-Python: " + project["requires-python"]]
    lines += ["Classifier: " + c for c in project.get("classifiers", [])]
    lines += ["Requires-Dist: " + d for d in project["dependencies"]]
    for extra, requires in project.get("optional-dependencies", {}).items():
        lines.append("Provides-Extra: " + extra)
        lines += ['Requires-Dist: %s; extra == "%s"' % (r, extra)
                  for r in requires]
    lines.append("Description-Content-Type: text/markdown")
    readme = (ROOT / project["readme"]).read_text()
    return "\n".join(lines) + "\n\n" + readme


def _wheel_info():
    return ("Wheel-Version: 1.0\nGenerator: halfspace_build\n"
            "Root-Is-Purelib: true\nTag: %s\n" % TAG)


def _epoch():
    """The date of every archive entry, in seconds since 1970: zip dates
    start in 1980."""
    return max(int(os.environ.get("SOURCE_DATE_EPOCH", 0)), 315532800)


def _sources():
    """The package's files, relative to ROOT, in name order."""
    files = [p.relative_to(ROOT) for p in (ROOT / PACKAGE).rglob("*")
             if p.is_file() and p.suffix in (".py", ".typed")
             and "__pycache__" not in p.parts]
    return sorted(files, key=str)


def _dist_info(project):
    return "%s-%s.dist-info" % (project["name"], project["version"])


def _write_wheel(directory, project, files):
    """Writes the wheel of `files` ({name in the wheel: bytes}) and the
    metadata; returns its file name."""
    dist_info = _dist_info(project)
    files = dict(files)
    files[dist_info + "/METADATA"] = _metadata(project).encode()
    files[dist_info + "/WHEEL"] = _wheel_info().encode()
    record = dist_info + "/RECORD"
    lines = []
    for name, data in sorted(files.items()):
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
        lines.append("%s,sha256=%s,%d" % (name, digest.rstrip(b"=").decode(),
                                          len(data)))
    lines.append(record + ",,")
    files[record] = ("\n".join(lines) + "\n").encode()
    name = "%s-%s-%s.whl" % (project["name"], project["version"], TAG)
    with zipfile.ZipFile(pathlib.Path(directory, name), "w",
                         zipfile.ZIP_DEFLATED) as wheel:
        # RECORD last, as the wheel specification recommends.
        for entry in sorted(files, key=lambda n: (n == record, n)):
            info = zipfile.ZipInfo(entry, time.gmtime(_epoch())[:6])
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, files[entry])
    return name


# --- PEP 517 --------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    project = _project()
    dist_info = pathlib.Path(metadata_directory, _dist_info(project))
    dist_info.mkdir(parents=True, exist_ok=True)
    (dist_info / "METADATA").write_text(_metadata(project))
    (dist_info / "WHEEL").write_text(_wheel_info())
    return dist_info.name


def build_wheel(wheel_directory, config_settings=None,
                metadata_directory=None):
    files = {str(path): (ROOT / path).read_bytes() for path in _sources()}
    return _write_wheel(wheel_directory, _project(), files)


def build_sdist(sdist_directory, config_settings=None):
    """halfspace-VERSION.tar.gz: the package, its build backend and
    pyproject.toml, and PKG-INFO."""
    project = _project()
    base = "%s-%s" % (project["name"], project["version"])
    files = {str(p): (ROOT / p).read_bytes() for p in _sources()}
    for extra in ("pyproject.toml", project["readme"],
                  "build_backend/halfspace_build.py"):
        files[extra] = (ROOT / extra).read_bytes()
    files["PKG-INFO"] = _metadata(project).encode()
    name = base + ".tar.gz"
    with open(pathlib.Path(sdist_directory, name), "wb") as out, \
            gzip.GzipFile(fileobj=out, mode="wb", mtime=_epoch()) as zipped, \
            tarfile.open(fileobj=zipped, mode="w",
                         format=tarfile.PAX_FORMAT) as sdist:
        for entry in sorted(files):
            info = tarfile.TarInfo(base + "/" + entry)
            info.size = len(files[entry])
            info.mtime = _epoch()
            info.mode = 0o644
            sdist.addfile(info, io.BytesIO(files[entry]))
    return name


# --- PEP 660: `pip install -e`, the package imported from the tree --------

def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_editable(metadata_directory,
                                        config_settings=None):
    return prepare_metadata_for_build_wheel(metadata_directory)


def build_editable(wheel_directory, config_settings=None,
                   metadata_directory=None):
    pth = (str(ROOT) + "\n").encode()
    return _write_wheel(wheel_directory, _project(),
                        {"__editable__.%s.pth" % PACKAGE: pth})
