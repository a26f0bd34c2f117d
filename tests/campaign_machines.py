"""Machines of a campaign, as subprocesses: the test of the campaign recipe
(``tests/test_campaign_in_a_bucket.py``) and ``bench/campaign_resume.py`` both run them.

A machine is a folder standing in for its local disk: Inspect's response cache (which holds the
judge's verdicts on Inspect's default judge path), the project's verdict cache (lm-eval,
``judge_calls=direct``) and Inspect's data folder (``XDG_DATA_HOME``: its sample buffer). Each
runs ``inspect eval-set`` as a team runs it on each machine: ``--id`` names the campaign, so every
machine writes logs of the same eval set; ``--log-dir-allow-dirty`` because the other machines'
logs are in the same folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Mapping

BIN = Path(sys.executable).parent


def machine_env(machine: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a process on ``machine`` (``base``: the environment, default this process's)."""
    return dict(base if base is not None else os.environ, INSPECT_CACHE_DIR=str(machine / "inspect-cache"),
                CLINCONSENSUS_CACHE_DIR=str(machine / "verdicts"), XDG_DATA_HOME=str(machine / "data"))


def eval_set(log_dir: str, machine: Path, model: str, judge: str, *extra: str, campaign: str = "release-2026-12",
             base: Mapping[str, str] | None = None) -> subprocess.Popen:
    """``inspect eval-set`` of the bundled ClinConsensus sample on ``machine``; its output goes to ``machine/out.txt``."""
    command = [str(BIN / "inspect"), "eval-set", "clinconsensus_tasks/clinconsensus", "-T", "data=sample",
               "--model", f"openai-api/cand/{model}", "--model-role", f"grader=openai-api/judge/{judge}",
               "--log-dir", log_dir, "--id", campaign, "--log-dir-allow-dirty", "--max-retries", "1", *extra]
    machine.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(command, env=machine_env(machine, base), stdout=(machine / "out.txt").open("a"), stderr=subprocess.STDOUT)


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 240) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.25)
