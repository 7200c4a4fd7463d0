"""Suite-wide settings, applied before any test module imports morphax (subprocesses the tests
start inherit them through the environment).

Background C builds are off: a jitted program's first call then waits for its native kernels, so
every test exercises the C backend it names instead of the NumPy stand-in that runs while a build
is in flight. tests/compiler/test_background_build.py turns them on where it tests them.
"""

import os

os.environ.setdefault("MORPHAX_COMPILE_IN_BACKGROUND", "0")
