"""Inspect's entry point (``[project.entry-points.inspect_ai]``).

Every ``inspect eval`` imports this module, whatever task it runs, so it must stay light: no torch,
sentence-transformers or jieba here or in what it imports at module level.
"""

from clinconsensus_tasks.climedbench.inspect_task import (
    climedbench,
    climedbench_bkt,
    climedbench_cpr,
    climedbench_cs,
    climedbench_ds,
    climedbench_fit,
    climedbench_ftt,
    climedbench_id1,
    climedbench_id2,
    climedbench_id3,
    climedbench_id4,
    climedbench_ke,
    climedbench_mc,
    climedbench_sso,
    climedbench_wtd,
)
from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

__all__ = [
    "clinconsensus",
    "climedbench",
    "climedbench_id1",
    "climedbench_id2",
    "climedbench_id3",
    "climedbench_id4",
    "climedbench_bkt",
    "climedbench_fit",
    "climedbench_ftt",
    "climedbench_wtd",
    "climedbench_ds",
    "climedbench_mc",
    "climedbench_sso",
    "climedbench_cpr",
    "climedbench_ke",
    "climedbench_cs",
]
