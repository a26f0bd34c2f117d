"""CliMedBench's variants end to end in both frameworks against the local stand-in server.

The server (``clinconsensus_tasks.stand_in``) stands in for the model under test and keeps
the prompts it receives, so the tests compare what Inspect and lm-eval actually sent: the same
perturbed text, the same NOTA options, the same CoT instruction. Scores must be identical in both
frameworks and equal to the shared core's scores of the server's answers, per scenario and per
input-length decile; ``clinconsensus-eval robustness`` pairs a clean and a perturbed run.
"""

from __future__ import annotations

import math

import json

import pytest

from clinconsensus_tasks.cli import main as cli_main
from clinconsensus_tasks.climedbench.dataset import load_scenario
from clinconsensus_tasks.stand_in import climedbench_answer
from clinconsensus_tasks.scorers.climedbench.length_deciles import decile_scores
from clinconsensus_tasks.scorers.climedbench.scenarios import SCENARIOS, SIMILARITY, summarize
from clinconsensus_tasks.scorers.climedbench.variants import (
    CLEAN,
    COT,
    NOTA,
    PERTURBED,
    VariantSettings,
    applies,
    ask_scenario,
    score_variant_answer,
)
from frameworks import run_lmeval_tasks

pytestmark = pytest.mark.slow

CODES = [c for c, s in SCENARIOS.items() if s.kind != SIMILARITY]  # WTD's similarity is covered elsewhere


def expected(variant: str, codes=CODES) -> tuple[dict[str, float], dict[str, str]]:
    """Metrics the shared core gives for the server's answers, and prompt per sample id."""
    rows, deciles, prompts = [], [], {}
    for code in codes:
        scenario = SCENARIOS[code]
        if not applies(scenario, variant):
            continue
        asked, _ = ask_scenario(scenario, load_scenario(code, announce=False).items, VariantSettings(variant))
        for a in asked:
            value, parsed = score_variant_answer(scenario, a.item, climedbench_answer(a.prompt), variant)
            rows.append((code, value, parsed))
            deciles.append((code, a.length_decile, value))
            prompts[f"{code}:{a.item['id']}"] = a.prompt
    return summarize(rows) | decile_scores(deciles), prompts


def run_inspect(tmp_path, codes, **args):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.climedbench.inspect_task import climedbench

    log = inspect_eval(climedbench(data_dir="sample", scenarios=",".join(codes), **args), model="openai-api/cand/cand-model",
                       log_dir=str(tmp_path), display="none")[0]
    assert log.status == "success", log.error
    return log, {k: v.value for s in log.results.scores for k, v in s.metrics.items()}


def run_lmeval(base_url, tasks, output_path=None):
    results = run_lmeval_tasks(base_url, tasks)
    if output_path is not None:
        output_path.mkdir(parents=True)
        for task, samples in results["samples"].items():
            (output_path / f"samples_{task}_2026.jsonl").write_text(
                "".join(json.dumps(s, ensure_ascii=False, default=str) + "\n" for s in samples), encoding="utf-8")
    return results


def test_perturbed_runs_send_identical_text_in_both_frameworks_and_score_alike(fake_server, tmp_path, capsys):
    want, prompts = expected(PERTURBED)

    fake_server.reset()
    log, metrics = run_inspect(tmp_path / "inspect", CODES, variant="perturbed")
    inspect_prompts = fake_server.climedbench_prompts()
    fake_server.reset()
    results = run_lmeval(fake_server.base_url, [f"{SCENARIOS[c].task_name}_perturbed" for c in CODES], tmp_path / "lmeval-perturbed")
    lmeval_prompts = fake_server.climedbench_prompts()

    # What the server received: the same perturbed prompts, once each, in both frameworks.
    assert sorted(inspect_prompts) == sorted(lmeval_prompts) == sorted(prompts.values())
    clean_prompts = expected(CLEAN)[1]
    assert all(prompts[k] != clean_prompts[k] for k in prompts)
    # The logs carry the perturbed question and the share changed, within one character of 12%.
    for sample in log.samples:
        meta = sample.metadata
        question = next(i for i in load_scenario(meta["scenario"], announce=False).items if i["id"] == meta["item"]["id"])["question"]
        assert meta["perturbed_question"] == meta["item"]["question"] and meta["perturbed_question"] in sample.input
        assert abs(meta["characters_changed"] - 0.12 * len(question)) <= 1
        assert meta["share_changed"] == meta["characters_changed"] / len(question)
    for task, samples in results["samples"].items():
        for s in samples:
            logged = json.loads(s["doc"]["variant_json"])
            assert logged["perturbed_question"] in s["doc"]["prompt"] and logged["share_changed"] > 0
    # Identical scores, per scenario and per length decile, equal to the core's.
    for code in CODES:
        lm = results["results"][f"{SCENARIOS[code].task_name}_perturbed"]
        for name in ("score", "parse_failure", *(f"length_decile_{d}" for d in range(1, 11))):
            assert metrics[f"{code}/{name}"] == lm[f"{name},answer"] == want[f"{code}/{name}"], (code, name)
    for d in range(1, 11):
        assert metrics[f"length_decile_{d}"] == pytest.approx(want[f"length_decile_{d}"], abs=1e-12)

    # The robustness command pairs the clean and the perturbed run, from either framework's files.
    clean_log, clean_metrics = run_inspect(tmp_path / "inspect-clean", CODES)
    assert cli_main(["robustness", clean_log.location, log.location, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    drops = {d["scope"]: d for d in report["drops"]}
    assert report["unpaired"] == {"only_clean": 0, "only_variant": 0}
    for code in CODES:
        assert drops[code]["items"] == (11 if code == "ID2" else 10)  # the bundled sample: 10 items a scenario, 11 in ID2
        assert drops[code]["drop"] == pytest.approx(clean_metrics[f"{code}/score"] - metrics[f"{code}/score"], abs=1e-12)
        assert drops[code]["low"] <= drops[code]["drop"] <= drops[code]["high"]
    assert drops["overall"]["drop"] == pytest.approx(clean_metrics["score"] - metrics["score"], abs=1e-12)
    run_lmeval(fake_server.base_url, [SCENARIOS[c].task_name for c in CODES], tmp_path / "lmeval-clean")
    assert cli_main(["robustness", str(tmp_path / "lmeval-clean"), str(tmp_path / "lmeval-perturbed"), "--json"]) == 0
    from_lmeval = json.loads(capsys.readouterr().out)
    assert [d["drop"] for d in from_lmeval["drops"]] == [d["drop"] for d in report["drops"]]
    assert cli_main(["robustness", clean_log.location, log.location]) == 0
    table = capsys.readouterr().out
    assert "overall" in table and "95% interval" in table

    # The report: a robustness section (clean against the variant, same model) and the decile curve.
    from clinconsensus_tasks.report.html_report import build_report

    info = build_report([clean_log.location, log.location], tmp_path / "report" / "r.html", resamples=2000, seed=0)
    md = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    # Run names are the report's display names (issue 14): the model as the server knows it, then the variant.
    assert info["climedbench_runs"] == ["cand-model", "cand-model [perturbed]"]
    overall = drops["overall"]
    assert "## CliMedBench robustness" in md
    assert f"| cand-model | perturbed | {overall['drop']:.4f} [{overall['low']:.4f}, {overall['high']:.4f}] | 131 | 0 |" in md
    deciles = " | ".join(f"{metrics[f'length_decile_{d}']:.4f}" for d in range(1, 11))
    assert f"| cand-model [perturbed] | {deciles} |" in md


def test_nota_leaves_out_and_counts_items_in_both_frameworks(fake_server, tmp_path):
    want, prompts = expected(NOTA)
    fake_server.reset()
    log, metrics = run_inspect(tmp_path, CODES, variant="nota")
    inspect_prompts = fake_server.climedbench_prompts()
    fake_server.reset()
    results = run_lmeval(fake_server.base_url, ["climedbench_nota"])
    assert sorted(inspect_prompts) == sorted(fake_server.climedbench_prompts()) == sorted(prompts.values())
    assert all("以上都不对" in p for p in prompts.values())
    assert log.eval.task_args["variant"] == "nota"
    assert log.eval.metadata["left_out"] == {"ID2": ["ID2-009"]}
    assert set(log.eval.metadata["not_applicable"]) == {"FTT", "SSO", "CPR", "KE"}
    assert results["n-samples"]["climedbench_id2_nota"]["effective"] == 10  # 11 bundled ID2 items, one left out
    for code in ("ID1", "ID2", "BKT", "FIT", "CS"):
        lm = results["results"][f"{SCENARIOS[code].task_name}_nota"]
        assert metrics[f"{code}/score"] == lm["score,answer"] == want[f"{code}/score"]
    assert results["results"]["climedbench_nota"]["score,answer"] == pytest.approx(metrics["score"], abs=1e-12)


def test_cot_reads_the_answer_after_the_reasoning_in_both_frameworks(fake_server, tmp_path):
    codes = ["BKT", "ID1", "SSO", "KE"]
    want, prompts = expected(COT, codes)
    fake_server.reset()
    _, metrics = run_inspect(tmp_path, codes, variant="cot")
    inspect_prompts = fake_server.climedbench_prompts()
    fake_server.reset()
    results = run_lmeval(fake_server.base_url, [f"{SCENARIOS[c].task_name}_cot" for c in codes])
    assert sorted(inspect_prompts) == sorted(fake_server.climedbench_prompts()) == sorted(prompts.values())
    for code in codes:
        task = f"{SCENARIOS[code].task_name}_cot"
        lm = results["results"][task]
        for name in ("score", "parse_failure"):
            assert metrics[f"{code}/{name}"] == want[f"{code}/{name}"], (code, name)
            if SCENARIOS[code].metric == "accuracy" or name == "parse_failure":  # 0/1 values: exact in any order
                assert lm[f"{name},answer"] == want[f"{code}/{name}"], (code, name)
            else:  # lm-eval aggregates with the core's mean: the exactly rounded sum, in any order
                values = [d[name] for d in sorted(results["samples"][task], key=lambda d: d["doc_id"])]
                assert lm[f"{name},answer"] == math.fsum(values) / len(values) == want[f"{code}/{name}"], (code, name)
    # Some answers never close their reasoning block: reported as parse failures, not read.
    assert sum(metrics[f"{c}/parse_failure"] for c in codes) > 0
