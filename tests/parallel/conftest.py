"""Tests on several devices run their cases (plain functions of a module in this folder) in a fresh
interpreter whose devices come from XLA_FLAGS=--xla_force_host_platform_device_count=N: the
`run_cases(module, names, devices=4)` fixture (tests/conftest.py's `device_case_runner`)."""

from __future__ import annotations

import functools
import pathlib

import pytest

HERE = pathlib.Path(__file__).resolve().parent


@pytest.fixture
def run_cases(device_case_runner):
    return functools.partial(device_case_runner, HERE, devices_via="xla_flags")
