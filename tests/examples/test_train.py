"""`python -m morphax.examples.train`, the README's main job: a small CNN trained on the shipped
UCI digits. The default run must reach at least 97% on the held-out 360 images (it takes a few
seconds, so it runs in the normal suite); shorter runs check the progress lines (plain on a
pipe, redrawn with '\\r' on a terminal), the options, the NumPy backend, the PNG (with
matplotlib; skipped without it) and the line that replaces it when matplotlib is missing, and a
two-device pmap run in a subprocess (devices are fixed when morphax starts)."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

import morphax
from morphax.examples import train


def _run(argv, out=None):
    out = io.StringIO() if out is None else out
    result = train.main(argv, out=out)
    return result, out.getvalue().splitlines()


@pytest.fixture(scope="module")
def default_run(tmp_path_factory):
    png = tmp_path_factory.mktemp("plot") / "curves.png"
    return (*_run(["--plot", str(png)]), png)


def test_default_run_reaches_97_percent(default_run):
    result, lines, _ = default_run
    assert result["test_accuracy"] >= 0.97, lines
    assert result["test_size"] == 360 and result["test_correct"] == round(result["test_accuracy"] * 360)
    epochs = [line for line in lines if line.startswith("epoch")]
    assert len(epochs) == 10 and epochs[-1].startswith("epoch 10/10 [####################] 22/22"), lines
    for word in ("loss", "accuracy", "steps/s", "test accuracy"):
        assert word in epochs[-1]
    assert lines[len(epochs)].startswith(f"test accuracy {result['test_accuracy']:.4f} (")
    # The loss falls and the training accuracy rises over the run.
    history = result["history"]
    assert history[-1]["loss"] < history[0]["loss"] / 10
    assert history[-1]["train_accuracy"] > history[0]["train_accuracy"]


def test_default_run_writes_the_png(default_run):
    pytest.importorskip("matplotlib")
    result, lines, png = default_run
    assert result["plot"] == str(png) and lines[-1] == f"loss and accuracy curves written to {png}"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_without_matplotlib_the_summary_says_how_to_get_the_plot(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    result, lines = _run(["--epochs", "1", "--plot", str(tmp_path / "c.png")])
    assert result["plot"] is None and not (tmp_path / "c.png").exists()
    assert lines[-2].startswith("test accuracy") and "matplotlib is not installed" in lines[-1]
    assert 'pip install "morphax[plot]"' in lines[-1]


def test_plain_lines_on_a_pipe_and_redrawn_line_on_a_terminal():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    _, plain = _run(["--epochs", "2", "--plot", ""])
    assert [line.split()[1] for line in plain[:2]] == ["1/2", "2/2"] and "\r" not in "".join(plain)
    assert len(plain) == 3  # two epochs, the summary; no plot asked for
    term = Terminal()
    _run(["--epochs", "1", "--plot", ""], out=term)
    text = term.getvalue()
    assert text.startswith("\repoch 1/1 [")
    first = text.split("\n")[0]
    # The line is redrawn in place; its final state is the plain line of that epoch (up to the
    # steps/s, a measured rate).
    final = first.rsplit("\r", 1)[1]
    assert first.count("\r") >= 2 and final.startswith("epoch 1/1 [####################] 22/22  loss ")
    assert final.split("steps/s")[1] == plain[0].split("steps/s")[1]


def test_numpy_backend_trains_and_leaves_the_config_as_it_was():
    before = morphax.config.read("morphax_backend")
    result, lines = _run(["--epochs", "1", "--backend", "numpy", "--plot", "", "--seed", "3"])
    assert morphax.config.read("morphax_backend") == before
    assert result["test_accuracy"] > 0.6, lines


def test_help_lists_the_options(capsys):
    with pytest.raises(SystemExit) as e:
        train.main(["--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for option in ("--epochs", "--batch-size", "--lr", "--seed", "--backend", "--devices", "--plot"):
        assert option in text


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--epochs", "0"], "--epochs must be at least 1"),
        (["--batch-size", "30", "--devices", "4"], "--batch-size 30 must split evenly over --devices 4"),
        (["--backend", "gpu"], "invalid choice: 'gpu'"),
    ],
)
def test_bad_options_are_refused(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        train.main(argv)
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_two_devices_train_data_parallel():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XLA_FLAGS", "OMPI_", "PMI_"))}
    out = subprocess.run(
        [sys.executable, "-m", "morphax.examples.train", "--devices", "2", "--epochs", "2", "--plot", ""],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert [line.split()[1] for line in lines[:2]] == ["1/2", "2/2"], out.stdout
    accuracy = float(lines[2].split()[2])
    assert accuracy > 0.85, out.stdout
