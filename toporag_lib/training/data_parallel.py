"""Data-parallel training over several processes or GPUs with torchrun: no code change, one more command word.

    torchrun --nproc_per_node 2 -m toporag_lib.training --config configs/explagraphs_toporag.json

Every process builds the same examples and model; at each step process r takes items r, r + N, r + 2N, ... of the
global batch, and the gradients of the per-process token-loss sums are summed across processes. Dividing by the
global number of answer tokens makes that sum exactly the gradient of one process's mean loss on the whole global
batch, so N processes end with the weights of one (up to float rounding; dropout draws differ per process).
Only process 0 writes checkpoints, metrics and predictions. Backend: NCCL on CUDA (one GPU per process, from
LOCAL_RANK), gloo on CPU. Without torchrun (WORLD_SIZE unset or 1) every function here is a no-op.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TypeVar

import torch
import torch.distributed as dist

T = TypeVar("T")


def init_from_env(device: str) -> str:
    """Join the process group torchrun describes (if any); return the device this process should use."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return device
    cuda = device.startswith("cuda")
    if not dist.is_initialized():
        dist.init_process_group("nccl" if cuda else "gloo")
    if cuda:
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        return f"cuda:{local}"
    return device


def rank() -> int:
    return dist.get_rank() if dist.is_initialized() else 0


def world_size() -> int:
    return dist.get_world_size() if dist.is_initialized() else 1


def is_main() -> bool:
    return rank() == 0


def local_slice(items: Sequence[T]) -> list[T]:
    """This process's share of a global batch: items rank, rank + N, ..."""
    return list(items[rank()::world_size()])


def sum_across(value: torch.Tensor) -> torch.Tensor:
    """The sum of `value` over all processes (in place; `value` itself with one process)."""
    if world_size() > 1:
        dist.all_reduce(value)
    return value


def sum_gradients(parameters: Iterable[torch.nn.Parameter]) -> None:
    """Sum every parameter's gradient across processes in one flat all-reduce (missing gradients count as 0)."""
    if world_size() <= 1:
        return
    params = list(parameters)
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    dist.all_reduce(flat)
    offset = 0
    for p in params:
        p.grad.copy_(flat[offset:offset + p.numel()].view_as(p.grad))
        offset += p.numel()


def barrier() -> None:
    if world_size() > 1:
        dist.barrier()


def close() -> None:
    """Leave the process group (end of a torchrun job)."""
    if dist.is_initialized():
        dist.destroy_process_group()
