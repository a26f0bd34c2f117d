"""The physicians' headline from real runs of both frameworks: a biased judge corrected by a review.

An Inspect run and an lm-eval run of the same model graded by the stand-in's ``judge-alt`` (it
disagrees with the reference rule on a fixed fifth of the criteria, chosen by a hash of answer and
criterion), against the project's stand-in server on 127.0.0.1 (standing in for the model's and the
judge's endpoints, over real HTTP). The physicians fill their sheets with the reference rule's
verdicts (``oracle_verdict``: what ``judge-model`` says). The reference's census, the rubric
accuracy ``judge-model`` gives over every case of the run, is worked out here from the rule, apart
from the review code. The physicians' estimate from ten of the twelve cases equals the one worked
out here (judge-alt's census plus the reviewed cases' mean difference, with its standard error) and
covers the reference's figure; the judge's bias interval covers judge-alt's census minus the
reference's; equally in both frameworks and in the gate. In a population this small and this
skewed (two of the twelve cases differ by -0.2 and -0.1, most by +0.03) about 78% of the export's
draws of ten cases cover; the seed here is one that does. ``bench/physician_estimate.py`` measures
the coverage on 900-case runs (0.93-0.96).
"""

from __future__ import annotations

import json
import math

import pytest
from openpyxl import load_workbook

from clinconsensus_tasks.cli import main as cli_main
from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.run_records.review_sheets import SHEET
from clinconsensus_tasks.stand_in import oracle_verdict
from clinconsensus_tasks.stand_in.candidates import candidate_answer
from frameworks import run_lmeval

pytestmark = pytest.mark.slow


def census(judge: str) -> float:
    """Rubric accuracy over every case of the bundled sample as ``judge`` grades the stand-in's answers."""
    cases = load_cases("sample").cases
    shares = []
    for case in cases:
        answer = candidate_answer(case.question)
        shares.append(sum(oracle_verdict(answer, text, judge) for _, text in case.rubrics) / len(case.rubrics))
    return sum(shares) / len(shares)


def test_the_physicians_estimate_covers_the_reference_in_both_frameworks(fake_server, tmp_path, capsys):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    log = inspect_eval(clinconsensus(data="sample"), model="openai-api/cand/cand-model",
                       model_roles={"grader": "openai-api/judge/judge-alt"}, log_dir=str(tmp_path / "inspect"), display="none")[0]
    assert log.status == "success", log.error
    run_lmeval(fake_server.base_url, tmp_path / "lmeval", judge="judge-alt")
    folder = tmp_path / "review"
    assert cli_main(["review", "export", str(tmp_path / "inspect"), str(tmp_path / "lmeval"), "--output", str(folder),
                     "--cases", "10", "--seed", "0"]) == 0
    for path in folder.glob("physician_*.xlsx"):  # the physicians: the reference rule, typed in Chinese
        book = load_workbook(path)
        for row in book[SHEET].iter_rows(min_row=2):
            row[4].value = "符合" if oracle_verdict(row[2].value, row[3].value) else "不符合"
        book.save(path)
    capsys.readouterr()
    assert cli_main(["review", "score", str(folder), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    reference, alt = census("judge-model"), census("judge-alt")
    assert reference != alt  # the judge is biased on this sample
    estimates = {j["framework"]: j["physicians_estimate"] for j in result["judges"]}
    assert set(estimates) == {"inspect", "lm-eval"}
    assert estimates["inspect"] == estimates["lm-eval"]  # the same answers and verdicts: the same figures, intervals included
    ra = estimates["inspect"]["metrics"]["rubric_accuracy"]
    assert ra["judge"] == pytest.approx(alt) and ra["cases"] == 12 and ra["reviewed_cases"] == 10
    # Worked out from the rules: each reviewed case's difference (reference - judge-alt) on its 30 criteria.
    reviewed = {item["case_id"] for item in json.loads((folder / "review_key.json").read_text(encoding="utf-8"))["items"].values()}
    diffs = [sum(oracle_verdict(candidate_answer(c.question), t) - oracle_verdict(candidate_answer(c.question), t, "judge-alt")
                 for _, t in c.rubrics) / 30 for c in load_cases("sample").cases if c.case_id in reviewed]
    mean = sum(diffs) / 10
    se = math.sqrt((1 - 10 / 12) * sum((d - mean) ** 2 for d in diffs) / 9 / 10)
    assert ra["physicians"]["estimate"] == pytest.approx(alt + mean) and ra["physicians"]["stderr"] == pytest.approx(se)
    assert ra["physicians"]["low"] <= reference <= ra["physicians"]["high"], (ra, reference)
    assert ra["bias"]["low"] <= alt - reference <= ra["bias"]["high"], (ra, alt - reference)
    assert ra["physicians"]["high"] - ra["physicians"]["low"] > 0
    # Every criterion of the reviewed cases was labelled: the other headline metrics are estimated too.
    assert set(estimates["inspect"]["metrics"]) == {"rubric_accuracy", "pass@7", "pass@10", "cacs@7", "cacs@10"}

    # The gate, in each framework: the run's own records give the same estimate; the bias bar holds it to the interval.
    wide = int(100 * max(abs(ra["bias"]["low"]), abs(ra["bias"]["high"]))) + 2
    for run in (str(tmp_path / "inspect"), str(tmp_path / "lmeval")):
        assert cli_main(["summarize", "--strict", run, "--review", str(folder), "--max-judge-bias", "0.5"]) == 1
        out = capsys.readouterr().out
        line = (f"rubric accuracy: judge {ra['judge']:.3f}, physicians' estimate {ra['physicians']['estimate']:.3f} "
                f"[{ra['physicians']['low']:.3f}, {ra['physicians']['high']:.3f}]")
        assert f"{line}, judge's bias" in out and "is not within +-0.5 points (--max-judge-bias)" in out, out
        assert cli_main(["summarize", "--strict", run, "--review", str(folder), "--max-judge-bias", str(wide)]) == 1  # the sample fails
        out = capsys.readouterr().out
        assert "--max-judge-bias" not in out and line in out, out
