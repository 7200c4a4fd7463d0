"""`python -m morphax run`: run an unmodified JAX program on morphax.

    python -m morphax run script.py [args...]    run a script as __main__
    python -m morphax run -m module [args...]    run a module as __main__ (like `python -m`)

Both install `morphax.compat` first, so the program's `import jax` (and `jax.*`, `jaxlib`)
gives morphax. `sys.argv` is what the program would see under `python script.py args...`.
"""

from __future__ import annotations

import os
import runpy
import sys

USAGE = """\
usage: python -m morphax run script.py [args...]
       python -m morphax run -m module [args...]

Run a JAX program on morphax: jax imports (jax, jax.*, jaxlib) are mapped onto morphax
(morphax.compat.install()), then the script or module runs as __main__ with sys.argv set as
plain `python` would set it.

commands:
  run script.py [args...]   run a Python script as __main__
  run -m module [args...]   run a module (or a package's __main__) as __main__

options:
  -h, --help                show this message and exit
"""


def _fail(message: str) -> int:
    sys.stderr.write(f"python -m morphax: {message}\n\n{USAGE}")
    return 2


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        if not args:
            return _fail("missing command (only `run` exists)")
        sys.stdout.write(USAGE)
        return 0
    command, rest = args[0], args[1:]
    if command != "run":
        return _fail(f"unknown command {command!r} (only `run` exists)")
    if not rest:
        return _fail("`run` needs a script path or `-m module`")
    if rest[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0

    from morphax import compat

    if rest[0] == "-m":
        if len(rest) < 2:
            return _fail("`run -m` needs a module name")
        module, program_args = rest[1], rest[2:]
        compat.install()
        # As `python -m`: the current directory comes first on sys.path; runpy puts the module's
        # file path in sys.argv[0].
        sys.argv = [module, *program_args]
        if sys.path[:1] != [os.getcwd()]:
            sys.path.insert(0, os.getcwd())
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return 0

    script, program_args = rest[0], rest[1:]
    if not os.path.exists(script):
        return _fail(f"cannot run {script!r}: no such file")
    compat.install()
    # As `python script.py`: the script's directory takes the place `python -m` gave the current
    # directory at the front of sys.path (morphax is already imported, so it stays reachable).
    sys.argv = [script, *program_args]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
