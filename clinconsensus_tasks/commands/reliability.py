"""``clinconsensus-eval reliability RUN... --output DIR``: the runs' judges asked again.

A sample of each run's rows (an answer and one criterion; cases drawn per subject x difficulty, every
case the same chance) goes to the run's own judge(s) again, ``--repeat`` times as it was and once
under each answer-irrelevant edit, each ask a fresh request under the protocol the run recorded
(``run_records.reliability_check``). Before the first ask it prints the calls, tokens and, with
``--prices``, the money; ``--max-calls`` stops it there, and every answer obtained is kept in DIR, so
the same command again asks only what is missing. The figures (``scorers.reliability``): each judge's
flip rate and agreement with itself, by subject and difficulty, the rows that flipped, each edit's
flips and their direction, and each headline metric's noise split between the cases and the judge;
as tables, ``--json`` (null for undefined) and ``DIR/reliability.json``. The release gate reads DIR:
``summarize --strict --reliability DIR --max-flip-rate X``; the report shows it: ``report --reliability DIR``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
from collections import defaultdict
from typing import Any

from clinconsensus_tasks import json_output
from clinconsensus_tasks.commands.arguments import add_thresholds
from clinconsensus_tasks.commands.tables import format_table
from clinconsensus_tasks.gates.texts import figure, interval_text
from clinconsensus_tasks.scorers.clinconsensus.answer_forms import TRANSFORMS

RESULTS_FILE = "reliability.json"
SHOWN_ROWS = 10


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", help="Inspect logs or lm-eval samples_clinconsensus*.jsonl files of ClinConsensus runs, or folders "
                                           "or URLs holding them")
    p.add_argument("--output", required=True, metavar="DIR",
                   help="the check's folder, local or a URL prefix: its plan, every ask as it comes, reliability.json; the same "
                        "command again resumes it (asks only what is missing)")
    p.add_argument("--repeat", type=int, default=2, help="asks of each row as it was (at least 2)")
    p.add_argument("--cases", type=int, default=30, help="cases drawn in all, shared among the subject x difficulty strata by their sizes (every case the same chance)")
    p.add_argument("--criteria-per-case", default="all", metavar="K|all",
                   help="criteria asked of each drawn case (all: the headline's noise can be split too; a batched run always all)")
    p.add_argument("--transforms", default=",".join(TRANSFORMS), metavar="NAMES",
                   help=f"answer-irrelevant edits each asked once, comma-separated ({', '.join(TRANSFORMS)}), or none")
    p.add_argument("--seed", type=int, default=0, help="seed of the draw")
    p.add_argument("--prices", "--price", action="append", default=[], metavar="[JUDGE=]IN,CACHED,OUT",
                   help="judge prices per million tokens (input, cached input, output), per judge or for all; repeatable "
                        "(default: tokens only)")
    p.add_argument("--max-calls", type=int, metavar="N",
                   help="ask no more than N judge calls this time (re-asks of unreadable replies aside); the rest waits for the "
                        "same command again (default: no limit)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and what it would cost; ask nothing")
    add_thresholds(p)
    p.add_argument("--resamples", type=int, default=1000, help="case bootstrap resamples of every interval")
    p.add_argument("--json", action="store_true", help="print JSON (null for undefined) instead of tables")


def _criteria_per_case(text: str) -> int | None:
    if str(text).strip().lower() == "all":
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"--criteria-per-case {text!r}: a number, or all") from None


def _transforms(text: str) -> list[str]:
    names = [t.strip() for t in str(text).split(",") if t.strip()]
    return [] if names == ["none"] else names


def main(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.run_records.reliability_check import (
        CheckError, load_plan, read_asks, read_check_runs, plan_check, run_figures, run_protocol, same_plan, save_plan, unit_usage, units,
    )
    from clinconsensus_tasks.scorers.usage import TokenUsage, parse_prices, price_for
    from clinconsensus_tasks.storage import output_location, write_text

    runs = read_check_runs(args.runs)
    plan = plan_check(runs, args.cases, _criteria_per_case(args.criteria_per_case), args.repeat, _transforms(args.transforms), args.seed)
    folder = output_location(args.output)
    held = load_plan(folder)
    if held is not None:
        differs = same_plan(held, plan)
        if differs:
            raise CheckError(f"{folder} holds another check ({differs}): resume it with the command that made it, or give a new --output")
        plan = held
    protocols = [run_protocol(run) for run in runs]  # each run's prompt rebuilt and checked by its sha256 before any call
    asks, notes = read_asks(folder) if held is not None else ({}, [])
    planned = units(plan, runs)
    pending = [u for u in planned if u.id not in asks]
    prices = parse_prices(args.prices)
    # every judge bound again and checked before anything is printed or written: a judge that cannot be
    # reached or a setting it lacks (its API key) stops the command in one line
    askers = _askers(runs, protocols, pending) if not args.dry_run else {}
    cost: dict[str, TokenUsage] = defaultdict(TokenUsage)
    recorded = 0
    for unit in pending:
        usage, from_run = unit_usage(unit, protocols[unit.run].mode, protocols[unit.run].template)
        cost[plan["runs"][unit.run]["judges"][unit.role]] += usage
        recorded += from_run
    _say(f"reliability: {len(runs)} run(s), {len(plan['rows'])} cases drawn, {sum(map(len, plan['rows'].values()))} rows; "
         f"{len(planned)} asks planned ({len(planned) - len(pending)} already in {folder}), {len(pending)} to ask")
    for judge, usage in sorted(cost.items()):
        money = price_for(judge, prices)
        _say(f"reliability: {judge}: {usage.calls} calls, about {usage.prompt_tokens} prompt and {usage.completion_tokens} completion tokens"
             + (f", about {money.cost(usage):.4f} in money" if money else ""))
    if pending:
        _say(f"reliability: tokens from the runs' own usage for {recorded} of {len(pending)} asks, else characters / 1.5")
    for note in notes:
        _say(f"reliability: note: {note}")
    if args.dry_run:
        return 0
    if held is None:
        save_plan(folder, plan)
    from clinconsensus_tasks.scorers.clinconsensus.judge_failures import JudgeUnavailableError

    # While asking, Python's full collections leave out what exists now (the frameworks' modules, the
    # runs' records): each one scanned it all and stalled the asks 0.2-0.4 s, every 8 s of an
    # Inspect check (bench/reliability_speed.py: the judging span 1.24x -> 1.18x the ideal).
    gc.freeze()
    try:
        asked, stopped, unreached = asyncio.run(_ask(plan, askers, protocols, pending, folder, args.max_calls))
    finally:
        gc.unfreeze()
    if unreached:
        raise JudgeUnavailableError(f"reliability: the judge did not answer ({unreached}): {asked} asks made and kept in {folder}, the "
                                    "rest not; once the judge works, run the same command again and only the missing asks are made")
    if stopped:
        _say(f"reliability: stopped at --max-calls {args.max_calls}: {asked} asks made now, {len(pending) - asked} left; every answer is "
             f"kept in {folder}: run the same command again (a larger --max-calls) to ask the rest")
    asks, notes = read_asks(folder)
    figures = {"folder": str(folder), "complete": all(u.id in asks for u in planned),
               "asks": {"planned": len(planned), "answered": sum(1 for u in planned if u.id in asks)},
               "settings": plan["settings"], "cases_drawn": len(plan["rows"]), "notes": notes,
               "runs": [run_figures(plan, i, run.records, asks, args.thresholds, args.resamples, args.seed) for i, run in enumerate(runs)]}
    write_text(folder / RESULTS_FILE, json_output.dumps(figures) + "\n")
    print(json_output.dumps(figures) if args.json else "\n".join(lines(figures)))
    return 0


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


WINDOW_CALLS = 240  # judge calls of the asks in flight (8 cases of 30 criteria; 240 cases batched): what a stop may lose
CALLS_PER_CONNECTION = 3  # ... or, for a judge of more than 80 connections, 3 a connection: enough to keep them all busy


def window(askers: dict[tuple[int, str], Any]) -> int:
    """The judge calls the asks in flight may hold at once (those asked, not yet written): 240, or
    3 per connection of the judge with the most. Why 3: a per-criterion ask sends its first
    criterion alone and its other 29 once it returns (for the judge's prompt cache), so it keeps
    15 connections busy on average over its two turns; asks holding 2 calls a connection keep
    every connection busy only while none waits, and the third absorbs the waits (simulated with
    the judge's own slots: 1.26x, 1.15x and 1.08x of the ideal at 256 connections for 2, 2 + 60/256
    and 3 a connection)."""
    return max([WINDOW_CALLS] + [CALLS_PER_CONNECTION * asker.connections for asker in askers.values()])


def _askers(runs: list[Any], protocols: list[Any], pending: list[Any]) -> dict[tuple[int, str], Any]:
    """Each judge the pending asks need (by run and role), bound again and sent the judge check
    (``reliability_check.judge_asker``): a judge that cannot be reached, or a setting it lacks, stops
    the command here, in one line, before any plan or ask is written."""
    from clinconsensus_tasks.run_records.reliability_check import judge_asker

    keys = dict.fromkeys((unit.group[0], unit.group[1]) for unit in pending)
    return {key: judge_asker(runs[key[0]], key[1], protocols[key[0]]) for key in keys}


async def _ask(plan: dict[str, Any], askers: dict[tuple[int, str], Any], protocols: list[Any], pending: list[Any], folder: Any,
               max_calls: int | None) -> tuple[int, bool, str]:
    """Ask ``pending`` (every first ask, then every second, then the edits), each ask written to
    ``folder`` as it returns; returns the asks made, whether ``max_calls`` stopped it, and why the
    judge could not be reached if it could not. An ask the judge did not answer (transport failures
    after the retries, its breaker open) is no answer of the judge's: it is not kept, no ask starts
    after it, and the check stops once those in flight return; an unreadable reply or a refused
    request is the judge's answer, kept as a failed ask. What binding the judges opened is closed
    on every way out (done, stopped, an error, Ctrl-C)."""
    try:
        return await _ask_streaming(plan, askers, protocols, pending, folder, max_calls)
    finally:
        for asker in askers.values():
            await asker.aclose()


async def _ask_streaming(plan: dict[str, Any], askers: dict[tuple[int, str], Any], protocols: list[Any], pending: list[Any], folder: Any,
                         max_calls: int | None) -> tuple[int, bool, str]:
    """The asks as a stream: a new ask starts as soon as the calls in flight leave room for it
    (:func:`window`), so the judge's connections are never idle while asks remain (they went in
    rounds of 240 calls before, each waiting for its slowest case: docs/performance.md). An ask's
    calls count against the window until its answer is written, so a stop loses at most a
    window's answers: those of the asks in flight and of those being written."""
    from tqdm.auto import tqdm

    from clinconsensus_tasks.run_records.reliability_check import AS_IS, asked_line, documents, unit_calls, write_asks

    forms = [AS_IS, *plan["settings"]["transforms"]]
    order = sorted(pending, key=lambda u: (forms.index(u.form), u.ask, u.run, u.role))  # stable: the run's case order within a group
    budget = max_calls if max_calls is not None else float("inf")
    todo: list[tuple[Any, int]] = []
    for unit in order:
        calls = unit_calls(unit, protocols[unit.run].mode)
        if calls > budget:
            break
        budget -= calls
        todo.append((unit, calls))
    limit = window(askers)

    async def one(unit: Any) -> tuple[Any, Any]:
        docs, answers = documents([unit])
        return unit, await askers[unit.run, unit.role].grade(docs[0], answers[0])

    running: dict[asyncio.Future[tuple[Any, Any]], int] = {}  # each ask in flight, and its calls
    held, asked, unreached, failure = 0, 0, "", None  # held: calls of the asks in flight, not yet written
    upcoming = iter(todo)
    following = next(upcoming, None)
    progress = tqdm(total=len(todo), desc="reliability: asks", unit="ask", file=sys.stderr)
    try:
        while True:
            while following is not None and not (unreached or failure) and (not running or held + following[1] <= limit):
                unit, calls = following
                running[asyncio.ensure_future(one(unit))] = calls
                held += calls
                following = next(upcoming, None)
            if not running:
                break
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            answered = []
            for job in done:
                if job.exception() is not None:
                    failure = failure or job.exception()
                    continue
                unit, graded = job.result()
                why = _unreached(graded)
                if why:
                    unreached = unreached or why
                else:
                    answered.append((unit, graded))
            if answered:  # no ask starts while they are written: their calls are held until then
                await asyncio.to_thread(write_asks, folder, [asked_line(u, g) for u, g in answered])
                asked += len(answered)
            held -= sum(running.pop(job) for job in done)
            progress.update(len(done))
    finally:
        progress.close()
        for job in running:
            job.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)
    if failure is not None:
        raise failure
    return asked, len(todo) < len(order) and not unreached, unreached


def _unreached(graded: Any) -> str:
    """Why the judge gave no answer to an ask (``""``: it answered, a verdict or not)."""
    from clinconsensus_tasks.scorers.clinconsensus.judge_failures import ERROR_JUDGE_UNAVAILABLE, ERROR_TRANSPORT

    failed = [j for j in graded.headline.judgments if j.error_kind in (ERROR_TRANSPORT, ERROR_JUDGE_UNAVAILABLE)]
    return f"{failed[0].error_kind}: {failed[0].error or ''}"[:200] if failed else ""


def lines(figures: dict[str, Any]) -> list[str]:
    """The check as tables."""
    settings, drawn = figures["settings"], figures["cases_drawn"]
    asked_for = "" if drawn == settings["cases"] else f" (--cases {settings['cases']}: every case the runs hold)"
    out = [f"== reliability check {figures['folder']}: {figures['asks']['answered']} of {figures['asks']['planned']} asks"
           + ("" if figures["complete"] else " (NOT FINISHED: run the same command again)")
           + f"; repeat {settings['repeat']}, {drawn} case{'' if drawn == 1 else 's'} drawn{asked_for}, criteria per case "
             f"{settings['criteria_per_case']}"]
    for run in figures["runs"]:
        name = run["run"].removesuffix(f" ({run['framework']})")  # the run's name says its framework: once here
        out.append(f"\n-- {name} ({run['framework']}, {run['path']})")
        rows = []
        for j in run["judges"]:
            r = j["repeatability"]
            rows.append([f"{j['role']} {j['judge']}", interval_text(r["flip_rate"]), interval_text(r["pairwise_disagreement"]),
                         interval_text(r["self_kappa"]), f"{r['rows_counted']} ({r['cases']})", str(r["failed_asks"])])
        out += format_table(["judge", "flip rate [95% CI]", "pairwise", "self-kappa (Fleiss)", "rows (cases)", "failed asks"], rows)
        edits = []
        for j in run["judges"]:
            for form, f in j["invariance"].items():
                edits.append([f"{j['role']} {form}", interval_text(f["flip_rate"]), interval_text(f["up"]), interval_text(f["down"]),
                              interval_text(f["net"]), str(f["rows"])])
        if edits:
            out.append("answer-irrelevant edits (flips against the first ask as it was; up = not met to met):")
            out += format_table(["judge · edit", "flip rate", "up", "down", "net (up - down)", "rows"], edits)
        noise = run["headline"]
        if "why" in noise:
            out.append(f"headline noise: n/a ({noise['why']})")
        else:
            table = [[name, f"{m['estimate']:.4f}", interval_text(m["cases_and_judge"]), interval_text(m["judge_alone"]),
                      figure(m["judge_share"])]
                     for name, m in noise.items()]
            out.append(f"the headline's noise ({run['headline_role']}): the case bootstrap holds both parts; judge alone = "
                       "the same cases asked again:")
            out += format_table(["metric", "estimate", "cases and judge [95% CI]", "judge alone [95% CI]", "judge's share"], table)
        flipped = [row for j in run["judges"] if j["role"] == run["headline_role"] for row in j["repeatability"]["flipped"]]
        if flipped:
            out.append(f"rows that flipped ({len(flipped)}; --json lists every one): " + "; ".join(
                f"{r['case_id']} {r['criterion_id']} {''.join('?' if a is None else 'M' if a else '-' for a in r['asks'])}"
                for r in flipped[:SHOWN_ROWS]))
    return out
