"""Figures: saving is byte-stable, so results/ changes only when a figure does."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from toporag_lib.study import plots  # noqa: E402


def test_saving_a_figure_twice_gives_the_same_png_and_svg_bytes(tmp_path):
    fig, ax = plt.subplots()
    ax.bar(["a", "b"], [1, 2])  # bars are clipped paths: their clip ids are what matplotlib randomizes
    first, second = plots.save(fig, tmp_path / "one" / "f.png"), plots.save(fig, tmp_path / "two" / "f.png")
    plt.close(fig)
    for suffix in (".png", ".svg"):
        assert first.with_suffix(suffix).read_bytes() == second.with_suffix(suffix).read_bytes(), suffix
    assert b"<dc:date>" not in first.with_suffix(".svg").read_bytes()
