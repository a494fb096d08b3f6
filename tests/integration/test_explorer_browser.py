"""The question explorer's static page in a real browser: headless Chromium loads the page that `write_page` writes
from a small ledger, and its rendered DOM shows every drawn question, its label and every run's answer, with each
figure decoded. Marked `browser` (Chromium is a system package: `make test-all` installs it when missing and runs
this; the default run checks the same page's HTML with Python's parser, `tests/study/test_explorer.py`)."""

from __future__ import annotations

import re
import shutil
import subprocess
from html import unescape

import numpy as np
import pytest

from explorer_ledger import write_ledger
from toporag_lib.study.explorer import Explorer
from toporag_lib.study.explorer_sections import pair_sections
from toporag_lib.study.explorer_page import write_page

pytestmark = pytest.mark.browser

# Run after the page has loaded: writes each image's decoded width into the DOM that --dump-dom prints.
PROBE = ("<script>window.addEventListener('load', () => document.body.setAttribute('data-image-widths', "
         "Array.from(document.images).map(i => i.naturalWidth).join(',')));</script>")


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.fail("no Chromium on this machine: `make test-all` installs it (apt-get install chromium)")


def headless(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--virtual-time-budget=10000", *args], capture_output=True, text=True, timeout=120,
                          check=True)


def block_text(dom: str, block_id: str) -> str:
    """The visible text of one question block of the rendered DOM."""
    start = dom.index(f'id="{block_id}"')
    end = dom.find('<div class="block"', start)
    html = dom[start: end if end > 0 else len(dom)]
    html = re.sub(r"<(style|script)[^>]*>.*?</\1>", " ", html, flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_chromium_renders_the_page_with_each_question_label_answer_and_figure(tmp_path, tiny_encoder_path):
    from toporag_lib.study.explorer_page import anchor

    ledger = tmp_path / "runs"
    write_ledger(ledger, tiny_encoder_path)
    explorer = Explorer(ledger)
    page = write_page(explorer, tmp_path / "08_explorer.html", per_pair=2, rest_per_dataset=1)
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    dom = headless("--dump-dom", probed.as_uri()).stdout
    assert "<h1>Question explorer: where runs disagree</h1>" in dom
    drawn = {(s.dataset, i) for s in pair_sections(explorer, per_pair=2) for i in s.shown}
    assert drawn
    for dataset, i in drawn:
        text = block_text(dom, anchor(dataset, i))
        view = explorer.view(dataset, i, shown=[])
        assert " ".join(view.question.split()) in text
        assert f"label: {view.label}" in text
        for answer in view.answers:
            assert f"{answer.run} {answer.pred} {'✓ right' if answer.correct else '✗ wrong'}" in text
    widths = re.search(r'data-image-widths="([^"]*)"', dom)
    assert widths, "the page's load event did not run"
    assert widths.group(1) and all(int(w) > 200 for w in widths.group(1).split(","))  # every figure decoded
    headless("--window-size=1280,2000", f"--screenshot={tmp_path / 'page.png'}", page.as_uri())
    from PIL import Image

    shot = Image.open(tmp_path / "page.png").convert("L")
    assert shot.size == (1280, 2000) and len(np.unique(np.asarray(shot))) > 20  # drawn, not blank
