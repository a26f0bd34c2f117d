"""The release gate's rules on recorded facts alone (no run): which data is the benchmark, and
what the bar accepts. The end-to-end refusals, run in both frameworks, are in tests/test_release_gate.py."""

from __future__ import annotations

import pytest

from clinconsensus_tasks.gates import release as release_gate
from clinconsensus_tasks.gates.bar import ReleaseBar
from clinconsensus_tasks.gates.facts import RunFacts

HUB = "hf://datasets/skylenage/ClinConsensus/data/clinconsensus_low.jsonl"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def hub_run(revision: str, sha: str = "ab" * 32, requested: str = "") -> RunFacts:
    return RunFacts("run.eval", "inspect", "clinconsensus", data={"data_source": HUB, "data_sha256": sha, "data_revision": revision,
                                                                  "data_revision_requested": requested})


def test_hub_data_passes_only_at_the_package_revision_when_the_package_has_one(monkeypatch):
    monkeypatch.setattr(release_gate, "HF_DATA_REVISION", COMMIT)
    assert release_gate._data(hub_run(COMMIT), ReleaseBar()) == []
    assert release_gate._data(hub_run("main"), ReleaseBar()) == [
        f"hub data at revision main, not the package's {COMMIT}: run without a revision setting (the default is the package's)"]


def test_with_no_revision_in_the_package_a_hub_run_given_a_commit_is_pinned_and_a_branch_is_not(monkeypatch):
    # Issue 58 item 4: a hub commit hash names immutable content; a branch (the default one too) moves.
    monkeypatch.setattr(release_gate, "HF_DATA_REVISION", None)
    sha = "cd" * 32
    assert release_gate._data(hub_run(COMMIT, sha, requested=COMMIT), ReleaseBar()) == []
    how = ("python -c \"from huggingface_hub import HfApi; print(HfApi().dataset_info('skylenage/ClinConsensus', "
           "revision='main').sha)\"")
    assert release_gate._data(hub_run(COMMIT, sha, requested="main"), ReleaseBar()) == [
        f"hub data read at main (it read commit {COMMIT}), which moves: a release run is pinned to a commit; run again with "
        f"-T revision={COMMIT} (lm-eval: CLINCONSENSUS_DATA_REVISION={COMMIT}; the commit a branch points at: {how}), or, "
        f"if you checked the file, name its sha256 (--data-sha256 {sha})"]
    assert release_gate._data(hub_run("", sha), ReleaseBar()) == [
        f"hub data read at the default branch, which moves: a release run is pinned to a commit; run again with "
        f"-T revision=COMMIT (lm-eval: CLINCONSENSUS_DATA_REVISION=COMMIT; the commit a branch points at: {how}), or, "
        f"if you checked the file, name its sha256 (--data-sha256 {sha})"]
    # A short hash or a tag is not a commit; a recorded commit other than the one asked for is not the pinned data.
    assert release_gate._data(hub_run(COMMIT, sha, requested=COMMIT[:7]), ReleaseBar())
    assert release_gate._data(hub_run("f" * 40, sha, requested=COMMIT), ReleaseBar())
    assert release_gate._data(hub_run(COMMIT, sha, requested="main"), ReleaseBar(data_sha256=sha)) == []


def test_a_run_records_the_revision_it_asked_for_beside_the_commit_it_read():
    from clinconsensus_tasks.clinconsensus.dataset import LoadedCases, is_commit
    from clinconsensus_tasks.judge.provenance import data_provenance

    assert data_provenance(LoadedCases([], HUB, "ab" * 32, COMMIT, "main")) == {
        "data_source": HUB, "data_sha256": "ab" * 32, "data_revision": COMMIT, "data_revision_requested": "main"}
    assert [is_commit(r) for r in (COMMIT, COMMIT.upper(), COMMIT[:7], "main", "v1.0", None, "")] == [True, False, False, False, False, False, False]


def test_the_bundled_sample_is_refused_even_when_named(monkeypatch):
    from clinconsensus_tasks.clinconsensus.dataset import sample_path

    sha = release_gate._sha256(sample_path())
    run = RunFacts("run.eval", "inspect", "clinconsensus", data={"data_source": "/tmp/copy.jsonl", "data_sha256": sha})
    assert release_gate._data(run, ReleaseBar(data_sha256=sha))[0].startswith("the bundled synthetic sample, not the benchmark")


def test_the_bar_has_no_never_and_prints_what_loosens_it():
    with pytest.raises(ValueError, match="the gate has no 'never'"):
        ReleaseBar(failure_share=1.0)
    assert ReleaseBar().exceptions() == []
    bar = ReleaseBar(failure_share=0.05, allow_prompts=("project",))
    assert bar.exceptions() == ["--judge-failure-threshold 0.05", "--allow-prompt project"]
    assert bar.accepts().endswith("EXCEPTIONS: --judge-failure-threshold 0.05, --allow-prompt project")


def test_answers_cut_to_a_judges_context_are_not_a_release_run():
    # A judge with a short context (a refusal taught its limit, or a small max_model_len) judged
    # cut answers: the official API judge reads whole answers. Only the released judge's own
    # 5,120-token cut (the official runner's) is part of the protocol.
    from clinconsensus_tasks.clinconsensus.logs import LoggedCase
    from clinconsensus_tasks.judge.input_limit import OFFICIAL_CUT
    from clinconsensus_tasks.scorers.clinconsensus.records import GradedCase
    from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import CriterionJudgment

    def case(why):
        graded = GradedCase.of_judge("c1", "judge", "per_criterion", [CriterionJudgment(f"r{i}", True, "ok", 1) for i in range(30)])
        if why:
            graded = graded.from_dict({**graded.to_dict(), "judge_input_cut": {"answer_chars": 900, "judged_chars": 400,
                                                                                "limit_tokens": 1656, "why": why}})
        return LoggedCase(graded)

    run = RunFacts("run.eval", "inspect", "clinconsensus", records=[case(""), case(OFFICIAL_CUT), case("the server's context of 4000 "
                                                                                                      "tokens, from its refusal")])
    assert release_gate._judged(run, ReleaseBar()) == [
        "1 answer(s) judged with their tail cut to the judge's context (judge_input_cut): a release run's judge reads whole "
        "answers (the released judge's official 5,120-token cut excepted); serve the judge with a longer context and ask it again"]


def review_found(kappa, cases, rows=240, bias=None, reviewed=None):
    """A run's judge against a review as ``run_records.review_score.run_agreement`` gives it."""
    found = {"rows": rows, "judge_failures": 0, "no_verdict": 0,
             "overall": {"kappa": kappa, "macro_f1": {"estimate": 0.7, "low": 0.6, "high": 0.8}, "cases": cases}}
    if bias is not None:
        found["physicians_estimate"] = {"metrics": {"rubric_accuracy": {
            "judge": 0.6, "physicians": {"estimate": 0.6 - bias[0], "low": 0.6 - bias[2], "high": 0.6 - bias[1]},
            "bias": {"estimate": bias[0], "low": bias[1], "high": bias[2]}, "reviewed_cases": reviewed or cases, "cases": 900,
            "design": "the run as one stratum", "why": ""}}}
    return found


def test_a_judge_whose_whole_interval_misses_the_bar_falls_short_whatever_the_reviews_size():
    from clinconsensus_tasks.gates import physicians

    run = lambda found: RunFacts("run.eval", "inspect", "clinconsensus", physicians=found)  # noqa: E731
    # The case: kappa 0.51 [0.42, 0.58] from 8 cases against --min-kappa 0.9: no review of any size passes it.
    (short,) = physicians.min_kappa(run(review_found({"estimate": 0.51, "low": 0.42, "high": 0.58, "cases": 8}, 8)), ReleaseBar(min_kappa=0.9))
    assert "kappa 0.510 [0.420, 0.580]" in short and "the judge falls short: its whole kappa interval lies below --min-kappa 0.9" in short
    assert "too small" not in short
    # An interval that reaches the bar from a small review: a larger review could change the outcome.
    (small,) = physicians.min_kappa(run(review_found({"estimate": 0.85, "low": 0.7, "high": 0.95, "cases": 8}, 8)), ReleaseBar(min_kappa=0.9))
    assert "too small a review to show kappa >= 0.9" in small and "falls short" not in small
    # The bias: wholly beyond +-2 points, from 8 reviewed cases; or reaching within it.
    wide = review_found({"estimate": 0.8, "low": 0.7, "high": 0.9, "cases": 8}, 8, bias=(0.08, 0.05, 0.11))
    (past,) = physicians.judge_bias(run(wide), ReleaseBar(max_judge_bias=2))
    assert "the judge falls short: its whole bias interval [+5.0, +11.0] lies beyond +-2 points" in past
    below = review_found({"estimate": 0.8, "low": 0.7, "high": 0.9, "cases": 8}, 8, bias=(-0.08, -0.11, -0.05))
    assert "[-11.0, -5.0] lies beyond +-2 points" in physicians.judge_bias(run(below), ReleaseBar(max_judge_bias=2))[0]
    near = review_found({"estimate": 0.8, "low": 0.7, "high": 0.9, "cases": 8}, 8, bias=(0.01, -0.02, 0.04))
    (small,) = physicians.judge_bias(run(near), ReleaseBar(max_judge_bias=2))
    assert "too small a review to show the judge's bias within +-2 points" in small


def test_the_numbers_under_a_passing_runs_line_are_its_headline_with_the_reports_intervals():
    # issue 58, item 8b (the end-to-end lines, with intervals from 12 cases: tests/test_release_gate.py)
    from types import SimpleNamespace

    from clinconsensus_tasks.climedbench.logs import ItemLog
    from clinconsensus_tasks.commands.summarize import headline_figures, headline_text
    from clinconsensus_tasks.scorers.climedbench.item_result import ItemResult
    from clinconsensus_tasks.scorers.clinconsensus.cacs import CaseResult

    items = ItemLog("run.eval", "m", "inspect", [ItemResult("1", "ID1", 1.0, True), ItemResult("2", "ID1", 0.0, True),
                                                 ItemResult("3", "SSO", 0.25, True)])
    assert headline_text(headline_figures(RunFacts("run.eval", "inspect", "climedbench", items=items))) == (
        "score 0.375 (the unweighted mean of 2 scenario scores, 3 items; no interval)")
    one = SimpleNamespace(graded=SimpleNamespace(result=lambda: CaseResult(20, 30)))  # 20 of 30 criteria met
    assert headline_text(headline_figures(RunFacts("run.eval", "inspect", "clinconsensus", records=[one]))) == (
        "cacs@10 0.524 [no interval: 1 case], cacs@7 0.583 [no interval: 1 case], pass@10 1.000 [no interval: 1 case], "
        "pass@7 1.000 [no interval: 1 case], rubric_accuracy 0.667 [no interval: 1 case] "
        "(1 case; 95% intervals: case bootstrap, 1000 resamples)")
    assert headline_figures(RunFacts("run.eval", "inspect", "clinconsensus")) is None  # nothing scored: no line
