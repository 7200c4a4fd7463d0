"""`run_cases(module, names, devices=4)`: the multi-device cases of this folder run in a fresh
interpreter whose devices come from `morphax.config.update("jax_num_cpu_devices", N)`
(tests/conftest.py's `device_case_runner`)."""

from __future__ import annotations

import functools
import pathlib

import pytest

HERE = pathlib.Path(__file__).resolve().parent


@pytest.fixture
def run_cases(device_case_runner):
    return functools.partial(device_case_runner, HERE, devices_via="config")
