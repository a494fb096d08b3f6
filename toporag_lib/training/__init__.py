"""Training and evaluation: examples, the one trainer, data parallelism, sharded preprocessing, the ledger."""

from toporag_lib.training.train_config import Limits, TrainConfig
from toporag_lib.training.trainer import Trainer, run

__all__ = ["Limits", "TrainConfig", "Trainer", "run"]
