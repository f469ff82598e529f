"""The version of the halfspace package: the C++ project's, written by
generate.py from CMakeLists.txt."""

__version__ = "0.1.0"
