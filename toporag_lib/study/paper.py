"""The numbers the TopoRAG paper reports (Llama-2-7B, two A6000 GPUs), for side-by-side tables. Transcribed from
the paper's Tables 1, 2, 5, 6 and 7; nothing here is measured by this project."""

from __future__ import annotations

import pandas as pd

SOURCE = "TopoRAG paper, Llama-2-7B on 2x A6000 (as reported; not measured here)"

TABLE1 = pd.DataFrame(
    [("Inference-only", "zero-shot", 0.5650, 0.3974, 41.06),
     ("Inference-only", "zero-shot CoT", 0.5704, 0.5260, 51.30),
     ("Inference-only", "CoT-BAG", 0.5794, 0.5680, 39.60),
     ("Inference-only", "KAPING", 0.6227, 0.4375, 52.64),
     ("Frozen LLM w/ PT", "prompt tuning", 0.5763, 0.6341, 48.34),
     ("Frozen LLM w/ PT", "GraphToken", 0.8508, 0.4903, 57.05),
     ("Frozen LLM w/ PT", "G-Retriever", 0.8516, 0.8131, 70.49),
     ("Frozen LLM w/ PT", "SubgraphRAG", 0.8535, 0.8074, 86.61),
     ("Frozen LLM w/ PT", "TopoRAG", 0.8899, 0.8362, 87.10),
     ("Tuned LLM", "LoRA (text only)", 0.8538, 0.7862, 66.03),
     ("Tuned LLM", "G-Retriever + LoRA", 0.8705, 0.8683, 73.79),
     ("Tuned LLM", "GNN-RAG", 0.8466, 0.8149, 85.70),
     ("Tuned LLM", "TopoRAG + LoRA", 0.9151, 0.8768, 90.66)],
    columns=["setting", "method", "explagraphs", "scenegraphs", "webqsp_hit"])

TABLE2 = pd.DataFrame(
    [("w/o CRL (no 2-cells)", 0.8576, 84.96), ("w/o TSR (shortest path)", 0.8524, 84.23),
     ("w/o MTR (GCN)", 0.8611, 85.46), ("TopoRAG", 0.9151, 90.66)],
    columns=["variant", "explagraphs", "webqsp_hit"])

TABLE5 = pd.DataFrame(
    [("DFS", 0.9151, 0.8768, 90.66), ("BFS", 0.9025, 0.8725, 90.18), ("random", 0.9187, 0.8698, 90.03)],
    columns=["variant", "explagraphs", "scenegraphs", "webqsp_hit"])

TABLE6 = pd.DataFrame(
    [("webqsp", 1, 15, 17, 2), ("webqsp", 2, 16, 18, 3), ("webqsp", 3, 17, 20, 4),
     ("scenegraphs", 1, 9, 12, 4), ("scenegraphs", 2, 9, 13, 5), ("scenegraphs", 3, 9, 14, 6)],
    columns=["dataset", "k", "0-cells", "1-cells", "2-cells"])

TABLE7 = pd.DataFrame(
    [("Frozen LLM w/ PT", "G-Retriever", 0.8516, 2.6, 0.8131, 267),
     ("Frozen LLM w/ PT", "TopoRAG", 0.8899, 3.0, 0.8362, 300),
     ("Tuned LLM", "G-Retriever + LoRA", 0.8705, 3.0, 0.8683, 285),
     ("Tuned LLM", "TopoRAG + LoRA", 0.9151, 3.3, 0.8768, 310)],
    columns=["setting", "method", "explagraphs", "explagraphs_min_per_epoch", "scenegraphs",
             "scenegraphs_min_per_epoch"])
