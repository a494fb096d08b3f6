"""Train and evaluate one config from the command line, and record the run in the results ledger.

    python -m toporag_lib.training --config configs/explagraphs_toporag.json [--out runs/x] [--set epochs=1 ...]
    torchrun --nproc_per_node 2 -m toporag_lib.training --config ...   # data-parallel, see `data_parallel`

`--set` overrides any field (`model.lora=true`, `retrieval.k2=0`, `limits.train=400`); unknown keys, keys given
twice, values of the wrong type, numbers that are not finite and values out of range are refused before any work
starts, naming the file and the field (`train_config.read_train_config`). `--ledger none` skips the record.

`--out` is a new or empty folder, or a run folder (resumed): a folder of other files is refused
(`NotARunFolderError`) and left as it is, and a folder another run is writing is refused (`RunFolderInUseError`,
naming its pid and host) before any work starts; the run holds its folder until its record is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from toporag_lib.paths import results_dir
from toporag_lib.training import data_parallel
from toporag_lib.training.ledger import record_run
from toporag_lib.training.train_config import read_train_config
from toporag_lib.training.trainer import Trainer, run_to_end


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, help="a JSON file of TrainConfig fields")
    parser.add_argument("--out", help="output folder (default: runs/<config file name>)")
    parser.add_argument("--set", nargs="*", default=[], help="overrides, e.g. epochs=1 model.encoder=gat")
    parser.add_argument("--name", help="the run's name in the ledger (default: the config file's name)")
    parser.add_argument("--ledger", default=str(results_dir() / "runs"), help="ledger folder, or 'none'")
    args = parser.parse_args(argv)
    config = read_train_config(args.config, args.set)
    out = Path(args.out or Path("runs") / Path(args.config).stem)
    with Trainer(config, out) as trainer:  # the folder's one writer until its record is written
        metrics = run_to_end(trainer)
        if data_parallel.is_main():
            if args.ledger != "none":
                command = " ".join(["python -m toporag_lib.training", *(argv if argv is not None else sys.argv[1:])])
                print(f"recorded in {record_run(out, args.ledger, args.name or Path(args.config).stem, command)}")
            print(json.dumps(metrics, indent=1))
    data_parallel.close()


if __name__ == "__main__":
    main()
