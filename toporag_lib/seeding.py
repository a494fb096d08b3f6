"""Determinism: one seed for Python's, numpy's and torch's random generators, and one torch thread where the thread
count would move numbers (embeddings, fitted retrievers): the same config and seed give the same run."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Run the block with torch on one CPU thread, then restore the caller's thread count."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
