"""``clinconsensus-eval audit LOG``: an API judge audits a local judge's run on a sample of cases.

Why: the dual-judge protocol (a local judge and an API judge) costs the API judge's full bill when
both grade everything. Here the local judge (e.g. ClinConsensus-Judge-8B on vLLM) has graded every
case of LOG (an Inspect log or an lm-eval samples file, either framework); the API judge
(``CLINCONSENSUS_JUDGE_*``, as for ``rescore``) grades only a stratified sample of the same answers
(``--share`` of each subject x difficulty stratum, ``--seed``), and the report gives

* the judges' agreement on the sampled criteria: Cohen's kappa with a case-jackknife interval,
* each headline metric as the local judge measured it over every case, and the API judge's value
  over every case estimated from the sample (difference estimator, with its interval),

computed by ``scorers.audit_estimate``. A failed judgment counts as not met, as in the metrics.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from clinconsensus_tasks.clinconsensus.logs import read_case_records
from clinconsensus_tasks.scorers.audit_estimate import (
    difference_estimate,
    kappa_interval,
    stratified_sample,
)
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PER_CRITERION


def stratum(metadata: dict[str, Any]) -> tuple[str, str]:
    """A case's stratum: its subject and its difficulty."""
    return str(metadata.get("subject", "")), str(metadata.get("difficulty", ""))


def audit(log: str, settings: Any, share: float, seed: int, mode: str = PER_CRITERION) -> dict[str, Any]:
    """Grade a stratified sample of ``log``'s answers with the judge of ``settings`` and compare."""
    from clinconsensus_tasks.judge.official_template import load_judge_prompt
    from clinconsensus_tasks.judge.tools import _regrade

    records = [r for r in read_case_records(log) if r.graded.epoch == 1]
    strata = {r.graded.case_id: stratum(r.metadata) for r in records}
    chosen = set(stratified_sample(strata, share, seed))
    sampled = [r for r in records if r.graded.case_id in chosen]
    api = {g.case_id: g for g in asyncio.run(_regrade(sampled, settings, mode, load_judge_prompt(None, mode)))}
    local = {r.graded.case_id: r.graded for r in records}
    pairs = {cid: [(bool(a.met), bool(b.met)) for a, b in zip(g.judgments, local[cid].judgments)] for cid, g in api.items()}
    metrics = {}
    for name in local[next(iter(local))].terms():
        local_terms = {cid: g.terms()[name] for cid, g in local.items()}
        estimate = difference_estimate(local_terms, {cid: g.terms()[name] for cid, g in api.items()}, strata)
        metrics[name] = {"local_judge": sum(local_terms.values()) / len(local_terms), "api_judge_estimate": estimate.to_dict()}
    return {"log": log, "local_judge": records[0].graded.judge, "api_judge": settings.model, "cases": len(records),
            "audited_cases": len(sampled), "share": share, "seed": seed, "strata": len(set(strata.values())),
            "kappa": kappa_interval(pairs).to_dict(), "metrics": metrics}


def add_arguments(parser: Any) -> None:
    parser.add_argument("log", help="the local judge's run: an Inspect log or an lm-eval samples_clinconsensus*.jsonl file")
    parser.add_argument("--share", type=float, default=0.1, help="share of each subject x difficulty stratum the API judge grades (default 0.1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    parser.add_argument("--judge-mode", default=PER_CRITERION, help="the API judge's mode (default per_criterion)")


def main_audit(args: Any, settings: Any) -> int:
    print(json.dumps(audit(args.log, settings, args.share, args.seed, args.judge_mode), ensure_ascii=False, indent=2))
    return 0
