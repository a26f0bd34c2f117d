"""A trained judge measured as the paper measures it (issue 61, item 3): its agreement with the API
judge over several held-out models' runs, pooled, with case bootstrap intervals (``compare --pool``)."""

from __future__ import annotations

import json

import pytest

from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.stand_in import alt_disagrees, candidate_answer

pytestmark = pytest.mark.slow


def test_compare_pools_held_out_runs_with_intervals(fake_server, tmp_path, capsys):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.cli import main as cli_main
    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    folder = tmp_path / "held-out"
    for model in ("cand-model", "other-model"):  # two held-out models (the stand-in answers both alike)
        log = inspect_eval(clinconsensus(data="sample"), model=f"openai-api/cand/{model}",
                           model_roles={"grader": "openai-api/judge/judge-model", "local_grader": "openai-api/judge/judge-alt"},
                           log_dir=str(folder), display="none")[0]
        assert log.status == "success", log.error
    flips = sum(alt_disagrees(candidate_answer(c.question), t) for c in load_cases("sample").cases for _, t in c.rubrics)

    assert cli_main(["compare", str(folder), "--pool", "--json"]) == 0
    pooled = json.loads(capsys.readouterr().out)
    assert pooled["agreement/runs"] == 2 and pooled["agreement/cases"] == 12  # cases resampled with both runs' answers to them
    assert pooled["agreement/percent"] == (720 - 2 * flips) / 720
    assert pooled["agreement/percent(model=cand-model)"] == pooled["agreement/percent(model=other-model)"] == (360 - flips) / 360
    for name in ("percent", "kappa", "macro_f1", "precision_met", "recall_met"):
        assert pooled[f"agreement/{name}_low"] <= pooled[f"agreement/{name}"] <= pooled[f"agreement/{name}_high"]
    assert pooled["agreement/kappa_low"] < pooled["agreement/kappa_high"]

    one = next(folder.iterdir())
    assert cli_main(["compare", str(one), "--json"]) == 0  # one run: the same figures, with its intervals
    single = json.loads(capsys.readouterr().out)
    assert single["agreement/percent"] == (360 - flips) / 360 and single["agreement/kappa"] == pooled["agreement/kappa"]
    assert single["agreement/cases"] == 12 and single["agreement/kappa_low"] <= single["agreement/kappa"] <= single["agreement/kappa_high"]

    # Two folders: runs paired by model (a re-scored copy keeps its model's name); a model missing on one side is named.
    assert cli_main(["compare", str(folder), str(folder), "--pool", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["agreement/percent"] == 1.0
    from clinconsensus_tasks.run_records.protocol import run_model

    missing = ({"cand-model", "other-model"} - {run_model(one)[0].rsplit("/", 1)[-1]}).pop()
    assert cli_main(["compare", str(folder), str(one), "--pool"]) == 2
    assert f"the runs' models differ: {missing} only in {folder}: pair each model's run" in capsys.readouterr().err
