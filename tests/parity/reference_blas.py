"""Runs the scikit-learn oracle on Debian's reference BLAS and LAPACK.

numpy and scipy call whichever libblas.so.3 the machine's alternatives
choose: the reference (netlib) BLAS that comes with numpy's package, or
OpenBLAS where another package brought it. Their averaged models differ in
the last bit between the two, so the oracle's arithmetic would depend on
the machine. `ensure()`, called before numpy is imported, starts the script
again with the reference libraries first on the loader's path; `check()`,
after the imports, confirms from the process's own mappings that they are
the ones loaded.
"""

import os
import re
import sys
import sysconfig

_MARK = "HALFSPACE_REFERENCE_BLAS"


def _dirs():
    lib = os.path.join("/usr/lib", sysconfig.get_config_var("MULTIARCH") or "")
    return [os.path.join(lib, "blas"), os.path.join(lib, "lapack")]


def ensure():
    """Re-executes this process with the reference BLAS and LAPACK first."""
    if os.environ.get(_MARK) == "1":
        return
    missing = [d for d in _dirs() if not os.path.exists(
        os.path.join(d, "lib%s.so.3" % os.path.basename(d)))]
    if missing:
        sys.exit("the reference BLAS/LAPACK are missing (%s): "
                 "apt-get install libblas3 liblapack3" % ", ".join(missing))
    path = os.environ.get("LD_LIBRARY_PATH")
    env = dict(os.environ, **{_MARK: "1", "LD_LIBRARY_PATH": ":".join(
        _dirs() + ([path] if path else []))})
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def check():
    """Exits unless the BLAS and LAPACK mapped are the reference ones."""
    with open("/proc/self/maps") as maps:
        loaded = {line.split()[-1] for line in maps if ".so" in line}
    blas = sorted(p for p in loaded
                  if re.match(r"lib.*(blas|lapack).*\.so", os.path.basename(p)))
    wrong = [p for p in blas if os.path.dirname(os.path.realpath(p)) not in
             [os.path.realpath(d) for d in _dirs()]]
    if wrong or not blas:
        sys.exit("the oracle must run on the reference BLAS and LAPACK; "
                 "loaded: %s" % (", ".join(blas) or "none"))
