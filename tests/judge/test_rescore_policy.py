"""``clinconsensus-eval rescore`` applies the judge failure policy as the frameworks do (issue 18,
item 9): a judge that refuses requests makes it exit non-zero with the policy's message and no
output, and every verdict it did obtain is in the verdict cache, so the next try asks only for the
missing ones. ``rescore`` is the only command that calls the judge outside the frameworks
(``judge_documents`` is called by lm-eval's filters and by ``run_records.regrade.regrade`` alone)."""

from __future__ import annotations

import json

import pytest

from clinconsensus_tasks.cli import main

from frameworks import run_lmeval

pytestmark = pytest.mark.slow

JUDGE = "judge-scripted"
VERDICT = json.dumps({"explanation": "回答满足该条目的要求。", "criteria_met": True}, ensure_ascii=False)


@pytest.fixture
def samples(fake_server, tmp_path):
    """An lm-eval samples file of the bundled sample (12 cases, 360 criteria), as --log_samples writes it."""
    results, _ = run_lmeval(fake_server.base_url)
    path = tmp_path / "samples_clinconsensus.jsonl"
    path.write_text("".join(json.dumps({**s, "filtered_resps": [str(r) for r in s["filtered_resps"]]}, ensure_ascii=False, default=str) + "\n"
                            for s in results["samples"]["clinconsensus"]), encoding="utf-8")
    fake_server.reset()
    return path


def test_a_judge_refusing_every_request_makes_rescore_fail(fake_server, tmp_path, samples, capsys):
    # Stands in for a judge endpoint that answers 400 to every grading request (a wrong deployment).
    fake_server.script(JUDGE, lambda req: (400, "model does not accept this request"))
    out = tmp_path / "rescored.jsonl"
    assert main(["rescore", str(samples), "--output", str(out), "--judge-model", JUDGE]) == 1
    err = capsys.readouterr().err
    assert "clinconsensus-eval: error: 360 of 360 judge verdicts failed (100.0%, above the 1.0% allowed by " \
           "CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD); main reasons: request: BadRequestError (HTTP 400) x360." in err
    assert not out.exists()  # no log that looks like a score
    assert fake_server.stats()["calls"] == {JUDGE: 360}


def test_verdicts_obtained_before_the_policy_stopped_are_not_asked_again(fake_server, tmp_path, samples, capsys):
    # Stands in for a judge that refuses its first 100 requests, then recovers.
    sent = []

    def judge(req):
        sent.append(req.user)
        return (400, "overloaded deployment") if len(sent) <= 100 else VERDICT

    fake_server.script(JUDGE, judge)
    out = tmp_path / "rescored.jsonl"
    args = ["rescore", str(samples), "--output", str(out), "--judge-model", JUDGE]
    assert main(args) == 1
    assert "100 of 360 judge verdicts failed" in capsys.readouterr().err
    assert not out.exists()
    assert main(args) == 0  # the same command again, the judge now well
    assert len(sent) == 360 + 100  # only the 100 refused verdicts were asked again
    assert json.loads(capsys.readouterr().out)["rubric_accuracy"] == 1.0
    assert len(out.read_text(encoding="utf-8").splitlines()) == 12


def test_the_threshold_can_be_raised_on_the_command_line(fake_server, tmp_path, samples, capsys):
    fake_server.script(JUDGE, lambda req: (400, "refused"))
    out = tmp_path / "rescored.jsonl"
    assert main(["rescore", str(samples), "--output", str(out), "--judge-model", JUDGE, "--judge-failure-threshold", "0"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["judge_failures"] == 360 and report["rubric_accuracy"] == 0.0  # accepted knowingly, and counted
