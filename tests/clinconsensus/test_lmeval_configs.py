"""The ClinConsensus lm-eval YAMLs are generated, and lm-eval's per-document values are right."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from clinconsensus_tasks.clinconsensus.lmeval_task import metric_list, process_results, slice_mean, total
from clinconsensus_tasks.scorers.clinconsensus.records import SECOND_ROLE, GradedCase
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import CriterionJudgment

CONFIGS = Path(__file__).resolve().parents[2] / "task_configs" / "clinconsensus"


def test_committed_yamls_are_what_the_generator_writes():
    spec = importlib.util.spec_from_file_location("generate", CONFIGS / "_generate_configs.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    rendered = generate.render()
    assert sorted(rendered) == ["clinconsensus.yaml", "clinconsensus_dual.yaml"]
    for name, text in rendered.items():
        assert (CONFIGS / name).read_text(encoding="utf-8") == text, f"{name} is stale: run {CONFIGS / '_generate_configs.py'}"


def test_headline_metrics_use_the_order_free_mean():
    aggregations = {m.name: m.aggregation for m in metric_list(dual=True)}
    for name in ("rubric_accuracy", "pass@7", "pass@10", "cacs@7", "cacs@10", "local/cacs@10"):
        assert aggregations[name] == "case_mean"
    assert aggregations["judge_failures"] == "total" and aggregations["cacs@10(audience=lay)"] == "slice_mean"
    assert aggregations["agreement/kappa"] == "agreement_kappa"


def verdicts(n_met: int, n: int = 30, failed: int = 0) -> list[CriterionJudgment]:
    return [CriterionJudgment(str(i + 1), None if i >= n - failed else i < n_met, "", 1) for i in range(n)]


def test_per_document_values(monkeypatch):
    monkeypatch.delenv("CLINCONSENSUS_N_CRITERIA", raising=False)
    record = GradedCase.of_judge("C1", "j", "per_criterion", verdicts(10, failed=2), slices={"audience": ("lay",)})
    doc = {"case_id": "C1", "audience": "lay", "extra_thresholds": [5]}
    values = process_results(doc, [json.dumps(record.to_dict())])
    assert values["rubric_accuracy"] == 10 / 30 and values["pass@10"] == 1.0 and values["cacs@7"] == 4 / 24
    assert values["pass@5"] == 1.0 and values["cacs@5"] == 6 / 26  # a --metadata threshold
    assert values["judge_failures"] == 2 and values["empty_answers"] == 0
    assert values["cacs@10(audience=lay)"] == 1 / 21 and values["cacs@10(audience=professional)"] is None
    assert "agreement/kappa" not in values
    assert slice_mean([None, 0.5, None, 0.25]) == 0.375
    assert str(slice_mean([None, None])) == "nan" and total([2, 0, 1]) == 3.0


def test_dual_per_document_values(monkeypatch):
    monkeypatch.delenv("CLINCONSENSUS_N_CRITERIA", raising=False)
    reference = GradedCase.of_judge("C1", "j", "per_criterion", verdicts(12))
    record = reference.with_role(SECOND_ROLE, GradedCase.of_judge("C1", "k", "per_criterion", verdicts(10)))
    values = process_results({"case_id": "C1", "audience": "professional"}, [json.dumps(record.to_dict())])
    assert values["local/rubric_accuracy"] == 10 / 30 and values["local/judge_failures"] == 0
    assert values["agreement/percent"] == {"met": 12, "local_met": 10, "judged": 30, "failures": 0,
                                           "local_failures": 0, "confusion": [10, 18, 0, 2]}
