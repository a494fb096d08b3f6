"""Run profiles for `make reproduce`: parameter overrides per notebook.

A notebook's own `parameters` cell holds the `cpu-quick` defaults (so a plain run is the quick run); a profile
overrides some of them. Notebooks are named by their file stem, e.g. `01_datasets`.
"""

from __future__ import annotations

from typing import Any

PROFILES: dict[str, dict[str, dict[str, Any]]] = {
    # The default: every notebook on this kind of 2-core CPU with the bundled small models, subsets, one seed.
    "cpu-quick": {},
    # Full splits and 3 seeds on the CPU.
    "cpu-full": {
        "01_datasets": {"synthetic_images": 2000},
    },
    # The paper's hyperparameters on a GPU; set the LLM folder with TOPORAG_LLM or edit here.
    "gpu-paper": {
        "01_datasets": {"synthetic_images": 2000},
    },
}


def notebook_parameters(profile: str, notebook: str) -> dict[str, Any]:
    """The parameters that `profile` passes to `notebook` (empty: the notebook's own defaults)."""
    return dict(PROFILES[profile].get(notebook, {}))
