"""The stax + adam example trains: on the shipped digits, a short run must learn (loss falls,
test accuracy well above chance)."""

from __future__ import annotations

from morphax.examples import stax_cnn


def test_example_learns_the_digits():
    images, labels = stax_cnn.load_digits()
    assert images.shape == (1797, 8, 8, 1) and labels.max() == 9 and 0 <= images.min() and images.max() <= 1
    lines = []
    history = stax_cnn.main(steps=100, report_every=50, log=lines.append)
    assert len(lines) == 2 and "test accuracy" in lines[-1]
    (_, loss_50, _, _), (_, loss_100, _, test_acc) = history
    assert loss_100 < loss_50 and test_acc > 0.9
