"""Train-step cost of TopoRAG against G-Retriever on the same frozen LLM, data and batches.

Both models wrap one loaded LLM; the methods take turns on the same batches (the order flips every step, so
machine load drifts hit both alike) and the median over the timed steps is reported, with the ratio. The paper
pays 15% more per epoch than G-Retriever; target here: at most 5% (topology work is done in preprocessing; the
encoder is small beside the LLM). Notebook 06 reports the same measurement as Table 7.

    python benchmarks/bench_train_step.py [--dataset explagraphs --steps 12 --batch-size 4]
"""

from __future__ import annotations

import argparse

from toporag_lib.study.efficiency import (
    STEP_METHODS,
    interleaved_step_times,
    step_overrides,
    step_runners,
    step_summary,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="explagraphs")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=4)
    args = parser.parse_args()
    options = {"num_images": 200} if args.dataset == "synthetic_scenes" else {}
    overrides = step_overrides(args.batch_size, args.steps + args.warmup, dataset_options=options)
    runners = step_runners(STEP_METHODS, args.dataset, overrides)
    times = interleaved_step_times(runners, args.warmup, args.steps)
    table = step_summary(times)
    for row in table.itertuples():
        print(f"{row.method:12s} median {row.seconds_per_step:.3f} s/step over {args.steps} steps "
              f"(encoder {runners[row.method].encoder_params() / 1e6:.2f}M params)")
    topo = table.set_index("method").loc["TopoRAG"]
    print(f"TopoRAG / G-Retriever: {topo['ratio_vs_G-Retriever']:.3f} (ratio of medians), "
          f"{topo.paired_ratio:.3f} (median of per-step ratios), {topo['cpu_ratio_vs_G-Retriever']:.3f} (CPU time)")


if __name__ == "__main__":
    main()
