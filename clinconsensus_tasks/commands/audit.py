"""``clinconsensus-eval audit LOG``: an API judge audits a local judge's run on a sample of cases.

Why: the dual-judge protocol (a local judge and an API judge) costs the API judge's full bill when
both grade everything. Here the local judge (e.g. ClinConsensus-Judge-8B on vLLM) has graded every
case of LOG (an Inspect log or an lm-eval samples file, either framework); the API judge
(``CLINCONSENSUS_JUDGE_*``, as for ``rescore``) grades only a stratified sample of the same answers
(``--share`` of each subject x difficulty stratum, ``--seed``), and the report gives

* the judges' agreement on the sampled criteria: Cohen's kappa with a case-bootstrap interval,
* each headline metric as the local judge measured it over every case, and the API judge's value
  over every case estimated from the sample (difference estimator, with its interval),

computed by ``scorers.audit_estimate``. A failed judgment counts as not met, as in the metrics.
"""

from __future__ import annotations

import asyncio
from typing import Any

from clinconsensus_tasks import json_output
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


def sample_ids(log: str, share: float, seed: int) -> list[str]:
    """The case ids of ``log``'s stratified sample: the cases the official judge must grade."""
    records = [r for r in read_case_records(log) if r.graded.epoch == 1]
    return stratified_sample({r.graded.case_id: stratum(r.metadata) for r in records}, share, seed)


def audit(log: str, settings: Any, share: float, seed: int, mode: str = PER_CRITERION,
          official: str | None = None) -> dict[str, Any]:
    """Grade a stratified sample of ``log``'s answers with the judge of ``settings`` and compare;
    with ``official`` (a run of the official judge on the sample, either framework), read its
    verdicts from that run instead of calling a judge."""
    records = [r for r in read_case_records(log) if r.graded.epoch == 1]
    strata = {r.graded.case_id: stratum(r.metadata) for r in records}
    local = {r.graded.case_id: r.graded for r in records}
    if official is None:
        from clinconsensus_tasks.judge.official_template import load_judge_prompt
        from clinconsensus_tasks.run_records.regrade import regrade

        chosen = set(stratified_sample(strata, share, seed))
        sampled = [r for r in records if r.graded.case_id in chosen]
        api = {g.case_id: g for g in asyncio.run(regrade(sampled, settings, mode, load_judge_prompt(None, mode)))}
        api_judge = settings.model
    else:
        answers = {r.graded.case_id: r.answer for r in records}
        official_records = [r for r in read_case_records(official) if r.graded.epoch == 1]
        for r in official_records:  # the two judges must have graded the very same answer
            if r.graded.case_id in answers and r.answer != answers[r.graded.case_id]:
                raise ValueError(f"{r.where}: case {r.graded.case_id}: the official run's answer differs from the "
                                 f"cheap run's ({log}); regenerate deterministically or audit without --official")
        api = {r.graded.case_id: r.graded for r in official_records}
        if not api:
            raise ValueError(f"{official}: no graded case")
        api_judge = next(iter(api.values())).judge
    for cid, g in api.items():
        if cid in local and len(g.judgments) != len(local[cid].judgments):
            raise ValueError(f"{official or log}: case {cid}: {len(g.judgments)} official verdicts "
                             f"but {len(local[cid].judgments)} in the cheap run")
    pairs = {cid: [(bool(a.met), bool(b.met)) for a, b in zip(g.judgments, local[cid].judgments)]
             for cid, g in api.items() if cid in local}
    metrics = {}
    for name in local[next(iter(local))].terms():
        local_terms = {cid: g.terms()[name] for cid, g in local.items()}
        estimate = difference_estimate(local_terms, {cid: g.terms()[name] for cid, g in api.items()}, strata)
        metrics[name] = {"local_judge": sum(local_terms.values()) / len(local_terms), "api_judge_estimate": estimate.to_dict()}
    return {"log": log, "local_judge": records[0].graded.judge, "api_judge": api_judge, "cases": len(records),
            "audited_cases": len(api), "share": share, "seed": seed, "strata": len(set(strata.values())),
            "kappa": kappa_interval(pairs).to_dict(), "metrics": metrics}


def add_arguments(parser: Any) -> None:
    parser.add_argument("log", help="the local judge's run: an Inspect log or an lm-eval samples_clinconsensus*.jsonl file")
    parser.add_argument("--share", type=float, default=0.1, help="share of each subject x difficulty stratum the API judge grades (default 0.1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    parser.add_argument("--judge-mode", default=PER_CRITERION, help="the API judge's mode (default per_criterion)")
    parser.add_argument("--sample-ids", action="store_true",
                        help="print the sample's case ids, comma-separated (for inspect eval --sample-id), and stop")
    parser.add_argument("--official", metavar="LOG",
                        help="the official judge's run on the sample (Inspect log or lm-eval samples file): read "
                             "its verdicts instead of calling a judge (default: none, the API judge grades the sample)")
    parser.add_argument("--judge-base-url", help="the API judge's endpoint; default $CLINCONSENSUS_JUDGE_BASE_URL")
    parser.add_argument("--judge-model", help="the API judge's model name; default $CLINCONSENSUS_JUDGE_MODEL")


def main(args: Any) -> int:
    """The API judge's settings are read only by a run that calls the judge."""
    from clinconsensus_tasks.commands.arguments import judge_settings
    from clinconsensus_tasks.log_files import CLINCONSENSUS, one_log

    args.log = one_log(args.log, CLINCONSENSUS)  # a folder or URL prefix holding one run: its log
    args.official = args.official and one_log(args.official, CLINCONSENSUS)
    if args.sample_ids:
        print(",".join(sample_ids(args.log, args.share, args.seed)))
        return 0
    settings = None if args.official else judge_settings(args)
    report = audit(args.log, settings, args.share, args.seed, args.judge_mode, args.official)
    print(json_output.dumps(report))
    return 0
