"""The judge asked again on runs both frameworks wrote, over real HTTP: the stand-in server stands in
for a hosted judge asked the same request again (its ``flipN`` judge reverses a known half of the
criteria with a known chance on each ask, seeded by the request and the ask's number, as a hosted
judge at temperature 0 may; its ``courteous`` judge says met to any answer with a closing line; its
plain judge reads content only), and Inspect's ``hf/`` provider loads an in-process local judge.

The figures must recover what was planted, exactly (the stand-in's own rule says which asks flip),
be the same from an Inspect log and an lm-eval samples file, and the check must send the run's own
requests again: each judge request of the run is received three times (the run, two asks)."""

from __future__ import annotations

import json

import pytest

from clinconsensus_tasks.cli import main
from clinconsensus_tasks.commands.reliability import WINDOW_CALLS
from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.scorers.clinconsensus.answer_forms import TRANSFORMS, transform
from clinconsensus_tasks.stand_in import candidate_answer, oracle_verdict
from clinconsensus_tasks.stand_in.judges import closing_present, flips_on

from frameworks import run_inspect, run_lmeval

pytestmark = pytest.mark.slow

CASES = load_cases("sample").cases
ROWS = sum(len(c.rubrics) for c in CASES)  # every case drawn (12 of 12), every criterion: 360 rows


def check(capsys, run, out, *extra):
    capsys.readouterr()
    assert main(["reliability", str(run), "--output", str(out), "--cases", "12", "--resamples", "300", "--json", *extra]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def headline_judge(figures):
    (run,) = figures["runs"]
    return next(j for j in run["judges"] if j["role"] == run["headline_role"])


def planted(judge: str, attempts=(2, 3)) -> tuple[int, int]:
    """(rows that flip, rows) by the stand-in's rule: the run asked each request once (attempt 1),
    the check's two asks are attempts 2 and 3."""
    flipped = 0
    for case in CASES:
        answer = candidate_answer(case.question)
        for _, criterion in case.rubrics:
            asks = {oracle_verdict(answer, criterion, judge) != flips_on(judge, answer, criterion, a) for a in attempts}
            flipped += len(asks) > 1
    return flipped, ROWS


def lmeval_samples(base_url, out, judge):
    run_lmeval(base_url, out, judge=judge)
    return next(out.rglob("samples_clinconsensus_*.jsonl"))


def test_a_flipping_judge_is_caught_the_same_in_both_frameworks(fake_server, tmp_path, capsys):
    log, _ = run_inspect(tmp_path / "logs", judge="judge-flip20-inspect")
    samples = lmeval_samples(fake_server.base_url, tmp_path / "lm", "judge-flip20-lmeval")
    by_framework = {"inspect": check(capsys, log.location, tmp_path / "check-i")[0],
                    "lm-eval": check(capsys, samples, tmp_path / "check-l")[0]}
    flipped, rows = planted("judge-flip20")
    assert 0 < flipped < rows
    for framework, figures in by_framework.items():
        judge = headline_judge(figures)
        r = judge["repeatability"]
        assert figures["complete"] and r["rows_counted"] == rows and r["failed_asks"] == 0, framework
        assert r["flip_rate"]["estimate"] == pytest.approx(flipped / rows), framework
        # the planted rate: half the criteria, 20% a flip on each ask: two asks disagree with chance 2 x 0.2 x 0.8
        assert r["flip_rate"]["low"] <= 0.5 * 0.32 <= r["flip_rate"]["high"], framework
        assert r["self_kappa"]["estimate"] < 0.9 and len(r["flipped"]) == flipped
    inspect_judge, lmeval_judge = (headline_judge(f) for f in by_framework.values())
    for key in ("repeatability", "invariance"):
        strip = lambda d: json.loads(json.dumps(d).replace("openai-api/judge/", ""))  # noqa: E731
        assert strip(inspect_judge[key]) == strip(lmeval_judge[key]), key
    noise_i, noise_l = (f["runs"][0]["headline"] for f in by_framework.values())
    assert noise_i == noise_l and noise_i["rubric_accuracy"]["judge_share"] > 0
    # The check sent the run's own requests again: each judge request received three times (two
    # frameworks x 360 rows), the edited answers' once each.
    stats = fake_server.stats()
    assert stats["bodies_by_times_seen"]["3"] == 2 * rows
    assert stats["calls"]["judge-flip20-inspect"] == stats["calls"]["judge-flip20-lmeval"] == rows * (1 + 2 + 3) + 2  # + two judge checks
    # The report's section: the same figures, made again from the asks and the runs the report read.
    from clinconsensus_tasks.report.html_report import build_report

    info = build_report([log.location, samples], tmp_path / "report.html", resamples=300, reliability=tmp_path / "check-i")
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "The judge asked again (check" in page and "Each judge against itself" in markdown and "Answer-irrelevant edits" in markdown
    assert "asked in the check, not among the report's runs" not in markdown and info["charts"] > 0
    flip = by_framework["inspect"]["runs"][0]["judges"][0]["repeatability"]["flip_rate"]
    assert f"{flip['estimate']:.3f} [{flip['low']:.3f}, {flip['high']:.3f}]" in markdown


def test_a_steady_judge_shows_no_flip_and_no_edit_moves_it(fake_server, tmp_path, capsys):
    # Markdown answers, so that every edit changes them; the plain judge reads content.
    log, _ = run_inspect(tmp_path / "logs", judge="judge-model", candidate="cand-markdown")
    figures, err = check(capsys, log.location, tmp_path / "check")
    judge = headline_judge(figures)
    assert judge["repeatability"]["flip_rate"]["estimate"] == 0.0 and judge["repeatability"]["rows_counted"] == ROWS
    assert set(judge["invariance"]) == set(TRANSFORMS)
    for form, found in judge["invariance"].items():
        assert found["rows"] == ROWS and found["flip_rate"]["estimate"] == 0.0 and found["net"]["estimate"] == 0.0, form
    noise = figures["runs"][0]["headline"]
    assert all(m["variance"]["judge"]["estimate"] == 0.0 and m["judge_alone"]["low"] == m["judge_alone"]["high"] == m["estimate"]
               for m in noise.values())
    asks = 12 * (2 + len(TRANSFORMS))  # every case asked twice as it was and once under each edit
    assert f"{asks * 30} calls" in err and f"tokens from the runs' own usage for {asks} of {asks} asks" in err


def test_a_judge_kinder_to_a_courteous_line_shows_one_direction(fake_server, tmp_path, capsys):
    samples = lmeval_samples(fake_server.base_url, tmp_path / "lm", "judge-courteous")
    judge = headline_judge(check(capsys, samples, tmp_path / "check")[0])
    not_met = sum(not oracle_verdict(candidate_answer(c.question), t) for c in CASES for _, t in c.rubrics)
    closing = judge["invariance"]["closing"]
    assert closing["rows"] == ROWS and closing["flip_rate"]["estimate"] == pytest.approx(not_met / ROWS)
    assert closing["up"]["estimate"] == pytest.approx(not_met / ROWS) and closing["down"]["estimate"] == 0.0
    assert closing["net"]["low"] > 0
    for form in ("line_breaks", "traditional"):
        assert judge["invariance"][form]["flip_rate"]["estimate"] == 0.0, form
    assert judge["invariance"]["markdown"]["rows"] == 0  # plain answers: nothing for it to remove, not asked
    assert all(closing_present(transform("closing", candidate_answer(c.question))) for c in CASES)
    assert judge["repeatability"]["flip_rate"]["estimate"] == 0.0


def gate(capsys, run, check_dir, bar="0.05"):
    capsys.readouterr()
    code = main(["summarize", "--strict", str(run), "--reliability", str(check_dir), "--max-flip-rate", bar, "--allow-prompt", "project"])
    lines = [line for line in capsys.readouterr().out.splitlines() if "flips" in line.split(": ", 1)[-1]]
    return code, lines


SIXTY = 60  # cases: a judge that never flips shows a flip rate <= 0.05 from 59 (1 - 0.05 ** (1 / 59) = 0.0495)


def sixty_cases(path):
    """A data file of :data:`SIXTY` cases: the bundled sample's 12, and four copies of each under ids
    and contexts of their own (every case its own answer and its own judge requests)."""
    from clinconsensus_tasks.clinconsensus.dataset import sample_path

    records = [json.loads(line) for line in sample_path().read_text(encoding="utf-8").splitlines() if line.strip()]
    out = []
    for copy in range(SIXTY // len(records)):
        for record in records:
            if copy:
                record = {**record, "case_id": f"{record['case_id']}-{copy}", "clinical_context": f"{record['clinical_context']}（第{copy + 1}次就诊）"}
            out.append(json.dumps(record, ensure_ascii=False))
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def run_inspect_on(data, log_dir, judge):
    """``run_inspect`` on another data file than the bundled sample."""
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    (log,) = inspect_eval(clinconsensus(data=str(data)), model="openai-api/cand/cand-model", model_roles={"grader": f"openai-api/judge/{judge}"},
                          log_dir=str(log_dir), display="none", max_retries=3)
    assert log.status == "success", log.error
    return log


def test_the_gate_refuses_the_noisy_judge_and_passes_the_steady_one_in_both_frameworks(fake_server, tmp_path, capsys, monkeypatch):
    # A judge that never flips is read at the exact bound for no flip in its cases (issue 58, item 6):
    # from the bundled sample's 12 cases at best 0.221, above --max-flip-rate 0.05, so the check asks 60
    # cases (three criteria each, 180 rows; no edits: the gate reads the repeated asks) of a 60-case file.
    data = sixty_cases(tmp_path / "sixty.jsonl")
    monkeypatch.setenv("CLINCONSENSUS_DATA", str(data))
    outcomes = {}
    for kind, judges in (("noisy", {"inspect": "judge-flip20-i", "lm-eval": "judge-flip20-l"}),
                         ("steady", {"inspect": "judge-model", "lm-eval": "judge-model"})):
        log = run_inspect_on(data, tmp_path / f"logs-{kind}", judges["inspect"])
        samples = lmeval_samples(fake_server.base_url, tmp_path / f"lm-{kind}", judges["lm-eval"])
        for framework, run in (("inspect", log.location), ("lm-eval", samples)):
            capsys.readouterr()
            assert main(["reliability", str(run), "--output", str(tmp_path / f"check-{kind}-{framework}"), "--cases", str(SIXTY),
                         "--criteria-per-case", "3", "--transforms", "none", "--resamples", "300", "--json"]) == 0
            figures = json.loads(capsys.readouterr().out)
            code, lines = gate(capsys, run, tmp_path / f"check-{kind}-{framework}")
            outcomes[kind, framework] = (code, [line.split(": ", 1)[1] for line in lines if line.startswith("FAIL")],
                                         headline_judge(figures)["repeatability"], lines)
    for framework in ("inspect", "lm-eval"):
        code, fails, rate, _ = outcomes["noisy", framework]
        assert rate["cases"] == SIXTY and rate["rows_counted"] == 3 * SIXTY and rate["flip_rate"]["estimate"] > 0.05
        assert code == 1 and len(fails) == 1 and "the judge falls short: its whole interval lies above --max-flip-rate 0.05" in fails[0]
        code, fails, rate, lines = outcomes["steady", framework]
        assert rate["flip_rate"]["high"] == pytest.approx(1 - 0.05 ** (1 / SIXTY)) and rate["flip_rate"]["zero_events"]["cases"] == SIXTY
        assert fails == []  # the flip-rate check passes (the stand-in run fails other checks: exit 1 all the same)
        assert any("flips 0.000 [0.000, 0.049] (no flip in 60 cases: exact bound) of its rows asked 2 times (180 rows of 60 cases" in line
                   for line in lines), lines  # the line under the verdict: the interval the gate read, and why
    strip = lambda t: t.replace("openai-api/judge/", "").replace("judge-flip20-i", "J").replace("judge-flip20-l", "J")  # noqa: E731
    assert strip(outcomes["noisy", "inspect"][1][0]) == strip(outcomes["noisy", "lm-eval"][1][0])


def test_a_stopped_check_resumes_without_asking_again(fake_server, tmp_path, capsys):
    samples = lmeval_samples(fake_server.base_url, tmp_path / "lm", "judge-flip20")
    log, _ = run_inspect(tmp_path / "logs", judge="judge-flip20-i")
    for run, judge, out in ((samples, "judge-flip20", tmp_path / "check-l"), (log.location, "judge-flip20-i", tmp_path / "check-i")):
        before = fake_server.stats()["calls"][judge]
        first, err = check(capsys, run, out, "--max-calls", "500")
        assert not first["complete"] and "stopped at --max-calls 500" in err
        asked_first = fake_server.stats()["calls"][judge] - before - 1  # the judge check
        assert asked_first <= 500
        second, err = check(capsys, run, out)
        assert second["complete"] and f"{first['asks']['answered']} already in" in err
        asked = fake_server.stats()["calls"][judge] - before - 2
        assert asked == ROWS * (2 + 3)  # every planned call once, none twice
        flipped, rows = planted("judge-flip20")
        assert headline_judge(second)["repeatability"]["flip_rate"]["estimate"] == pytest.approx(flipped / rows)
    # another plan in the same folder is refused, naming what differs
    capsys.readouterr()
    assert main(["reliability", str(samples), "--output", str(tmp_path / "check-l"), "--cases", "5"]) == 2
    assert "holds another check (its settings differ)" in capsys.readouterr().err


def test_every_judge_of_a_dual_run_and_of_a_jury_is_asked(fake_server, tmp_path, capsys, monkeypatch):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    dual = inspect_eval(clinconsensus(data="sample"), model="openai-api/cand/cand-model",
                        model_roles={"grader": "openai-api/judge/judge-model", "local_grader": "openai-api/judge/judge-flip30"},
                        log_dir=str(tmp_path / "dual"), display="none")[0]
    figures = check(capsys, dual.location, tmp_path / "check-dual", "--transforms", "none")[0]
    roles = {j["role"]: j for j in figures["runs"][0]["judges"]}
    assert set(roles) == {"grader", "local_grader"} and roles["grader"]["repeatability"]["flip_rate"]["estimate"] == 0.0
    assert roles["local_grader"]["repeatability"]["flip_rate"]["estimate"] == pytest.approx(planted("judge-flip30")[0] / ROWS)
    # a jury in lm-eval: each juror asked again, and the panel's majority from their asks
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_MODEL", "judge-model,judge-flip30-b,judge-flip30-c")
    from clinconsensus_tasks.lmeval_glue import simple_evaluate
    from lm_eval.loggers import EvaluationTracker

    tracker = EvaluationTracker(output_path=str(tmp_path / "jury"))
    results = simple_evaluate(model="local-chat-completions", tasks=["clinconsensus"], apply_chat_template=True, log_samples=True,
                              model_args={"model": "cand-model", "base_url": f"{fake_server.base_url}/chat/completions"},
                              evaluation_tracker=tracker, bootstrap_iters=0)
    tracker.save_results_aggregated(results=results, samples=results["samples"])
    tracker.save_results_samples(task_name="clinconsensus", samples=results["samples"]["clinconsensus"])
    samples = next((tmp_path / "jury").rglob("samples_clinconsensus_*.jsonl"))
    run = check(capsys, samples, tmp_path / "check-jury", "--transforms", "none")[0]["runs"][0]
    roles = {j["role"]: j for j in run["judges"]}
    assert set(roles) == {"juror_1", "juror_2", "juror_3", "panel"} and run["headline_role"] == "panel"
    assert roles["juror_1"]["repeatability"]["flip_rate"]["estimate"] == 0.0
    # jurors 2 and 3 flip on the same rows (the flip is seeded by the request's content, not the judge's
    # name), so they are the majority on every ask: the panel flips exactly where they do
    assert roles["juror_2"]["repeatability"]["flip_rate"]["estimate"] == pytest.approx(planted("judge-flip30")[0] / ROWS)
    assert roles["panel"]["repeatability"]["flip_rate"] == roles["juror_2"]["repeatability"]["flip_rate"]


def test_a_judge_that_is_not_the_runs_is_refused(fake_server, tmp_path, capsys, monkeypatch):
    samples = lmeval_samples(fake_server.base_url, tmp_path / "lm", "judge-model")
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_MODEL", "judge-alt")  # the environment now names another judge
    capsys.readouterr()
    assert main(["reliability", str(samples), "--output", str(tmp_path / "check"), "--cases", "3"]) == 2
    assert "the grader verdicts are 'judge-model''s, but the run's --metadata and the environment" in capsys.readouterr().err
    assert fake_server.stats()["calls"].get("judge-alt", 0) == 0  # refused before any request


def test_an_in_process_local_judge_is_asked_through_inspects_hf_provider(fake_server, tmp_path, tiny_judge_dir, capsys):
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    case = CASES[0]
    one = tmp_path / "one_case.jsonl"
    one.write_text(json.dumps({**case.to_record(), "rubrics": [{"criterion_id": c, "criterion": t} for c, t in case.rubrics[:3]]},
                              ensure_ascii=False) + "\n", encoding="utf-8")
    local = get_model(f"hf/{tiny_judge_dir}", device="cpu", do_sample=False, enable_thinking=False, memoize=False)
    log = inspect_eval(clinconsensus(data=str(one), n_criteria=3, thresholds=[1, 2], judge_max_tokens=4, judge_failure_threshold=0),
                       model="openai-api/cand/cand-model", model_roles={"grader": "openai-api/judge/judge-model", "local_grader": local},
                       log_dir=str(tmp_path / "logs"), display="none")[0]
    run = check(capsys, log.location, tmp_path / "check", "--transforms", "closing")[0]["runs"][0]
    local_figures = next(j for j in run["judges"] if j["role"] == "local_grader")
    # the tiny model's replies are noise: every ask fails, counted, and no flip rate is made of them
    r = local_figures["repeatability"]
    assert r["failed_asks"] == 3 * 2 and r["rows_counted"] == 0 and r["flip_rate"]["estimate"] is None  # undefined: null
    assert local_figures["invariance"]["closing"]["rows"] == 0


@pytest.mark.parametrize("framework", ["inspect", "lm-eval"])
def test_a_judge_that_stops_answering_keeps_every_answer_and_the_check_resumes(framework, fake_server, tmp_path, capsys, monkeypatch):
    from itertools import count

    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import GenerateConfig, get_model

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus
    from clinconsensus_tasks.stand_in.judges import CRITERION_MARK, judge_reply

    if framework == "inspect":  # the judge role bound with no retries, as the check binds it again from the header
        judge = get_model("openai-api/judge/judge-model", config=GenerateConfig(max_retries=0, timeout=20), memoize=False)
        run = inspect_eval(clinconsensus(data="sample"), model="openai-api/cand/cand-model", model_roles={"grader": judge},
                           log_dir=str(tmp_path / "logs"), display="none")[0].location
    else:
        run = lmeval_samples(fake_server.base_url, tmp_path / "lm", "judge-model")
        monkeypatch.setenv("CLINCONSENSUS_JUDGE_MAX_RETRIES", "0")  # the judge's connections drop: failed at once, no back-off
    calls, answered = count(), []
    given = 100  # answers the judge gives before it dies: fewer than the first asks of the 12 cases (360 calls)

    def answers_then_dies(request):  # the judge as it answers, for its first 100 calls; then no reply at all
        if next(calls) >= given:
            return None
        case = next(c for c in CASES if c.question in request.user)
        asked = request.user.split(CRITERION_MARK, 1)[1]
        answered.append((case.case_id, max((cid for cid, text in case.rubrics if text in asked), key=lambda cid: len(dict(case.rubrics)[cid]))))
        reply = judge_reply(request.model, request.system, request.user, 1, None)
        return reply.status, reply.content

    fake_server.script("judge-model", answers_then_dies)
    out = tmp_path / "check"
    capsys.readouterr()
    assert main(["reliability", str(run), "--output", str(out), "--cases", "12", "--transforms", "none"]) == 1
    err = capsys.readouterr().err
    kept = [json.loads(line) for path in (out / "asks").glob("*.jsonl") for line in path.read_text(encoding="utf-8").splitlines()]
    assert "the judge did not answer (" in err and f"{len(kept)} asks made and kept in {out}" in err
    # Every ask the judge answered whole is kept, whole, and nothing else: the answers lost are those
    # of the asks in flight when it died (each answered in part), no more of them than the window holds.
    answers_of: dict[str, set] = {}
    for case_id, criterion in answered:
        answers_of.setdefault(case_id, set()).add(criterion)
    whole = {case for case, got in answers_of.items() if len(got) == 30}
    assert len(answered) == given and {k["unit"].split("|")[1].split("@")[0] for k in kept} == whole and len(kept) == len(whole) >= 1
    assert all(k["unit"].endswith("|as_is|0") and None not in k["verdicts"].values() and len(k["verdicts"]) == 30 for k in kept)
    in_flight = set(answers_of) - whole
    assert len(in_flight) <= WINDOW_CALLS // 30 and given - 30 * len(whole) == sum(len(answers_of[c]) for c in in_flight)
    fake_server.script("judge-model", None)
    before = fake_server.stats()["calls"]["judge-model"]
    figures, err = check(capsys, run, out, "--transforms", "none")
    assert figures["complete"] and f"{len(kept)} already in" in err and figures["asks"] == {"planned": 24, "answered": 24}
    assert fake_server.stats()["calls"]["judge-model"] - before == 1 + (24 - len(kept)) * 30  # the judge check, then only what was missing
    assert headline_judge(figures)["repeatability"]["failed_asks"] == 0


@pytest.mark.parametrize("framework", ["inspect", "lm-eval"])
def test_a_check_keeps_the_judges_connections_busy_and_a_slow_call_holds_up_only_its_own_ask(framework, fake_server, tmp_path, capsys,
                                                                                              monkeypatch):
    # Issue 62: the check's judge gets the run's connections (an Inspect role that set none had the
    # eval's --max-connections, not the provider's 10), and the asks go as a stream: a new ask starts
    # as soon as the calls in flight leave room, so one slow call holds up its own ask, not a round
    # of 240 calls. The first judge request of the check is held until 300 others have been answered
    # (more than a round of 240, which could not finish without it); every connection stays in use.
    import threading
    import time

    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus
    from clinconsensus_tasks.stand_in.judges import judge_reply

    connections, latency = 16, 0.05
    if framework == "inspect":
        run = inspect_eval(clinconsensus(data="sample"), model="openai-api/cand/cand-model", model_roles={"grader": "openai-api/judge/judge-model"},
                           log_dir=str(tmp_path / "logs"), display="none", max_connections=connections)[0].location
    else:
        monkeypatch.setenv("CLINCONSENSUS_JUDGE_CONCURRENCY", str(connections))
        run = lmeval_samples(fake_server.base_url, tmp_path / "lm", "judge-model")
    lock, others_answered = threading.Lock(), threading.Event()
    seen = {"received": 0, "in_flight": 0, "most": 0, "answered": 0, "held_until_300": None}

    def judge(request):
        with lock:
            seen["received"] += 1
            first = seen["received"] == 1
            seen["in_flight"] += 1
            seen["most"] = max(seen["most"], seen["in_flight"])
        try:
            if first:
                seen["held_until_300"] = others_answered.wait(60)
            else:
                time.sleep(latency)
            reply = judge_reply(request.model, request.system, request.user, request.attempt, None)
            return reply.status, reply.content
        finally:
            with lock:
                seen["in_flight"] -= 1
                seen["answered"] += 1
                if seen["answered"] >= 300:
                    others_answered.set()

    fake_server.script("judge-model", judge)
    figures, _ = check(capsys, run, tmp_path / "check", "--transforms", "none")
    assert figures["complete"] and figures["asks"] == {"planned": 24, "answered": 24}
    assert seen["held_until_300"] is True  # 300 answers came while one call was held: no round waited for it
    assert seen["most"] == connections  # the run's connections, every one of them in use, never more
    assert seen["received"] == 24 * 30


def test_a_check_is_not_read_for_a_run_rejudged_since_or_another_run(fake_server, tmp_path, capsys):
    import shutil

    log, _ = run_inspect(tmp_path / "logs", judge="judge-model")
    check(capsys, log.location, tmp_path / "check", "--transforms", "none")
    other, _ = run_inspect(tmp_path / "other", judge="judge-model", candidate="cand-other")
    capsys.readouterr()
    assert main(["summarize", "--strict", other.location, "--reliability", str(tmp_path / "check"), "--max-flip-rate", "0.05"]) == 1
    assert "did not ask this run's judge (it read" in capsys.readouterr().out
    # The same file re-judged by another judge since the check (rescore's output put in its place).
    assert main(["rescore", log.location, "--output", str(tmp_path / "rejudged.eval"), "--judge-base-url", fake_server.base_url,
                 "--judge-model", "judge-alt", "--judge-api-key", "k"]) == 0
    shutil.copy(tmp_path / "rejudged.eval", log.location)
    capsys.readouterr()
    assert main(["summarize", "--strict", log.location, "--reliability", str(tmp_path / "check"), "--max-flip-rate", "0.05"]) == 1
    out = capsys.readouterr().out
    assert "asked grader openai-api/judge/judge-model, but the run is now judged by grader judge-alt (re-judged since?)" in out
    # The report, matching the check to its runs in the same place, shows no figures of the old judge for it.
    from clinconsensus_tasks.report.html_report import build_report

    build_report([log.location], tmp_path / "report" / "report.html", resamples=50, reliability=tmp_path / "check")
    markdown = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert f"{log.location}: not shown: the reliability check in {tmp_path / 'check'} asked grader openai-api/judge/judge-model, " \
           "but the run is now judged by grader judge-alt (re-judged since?)" in markdown
    leaderboard = markdown.split("## Leaderboard", 1)[1].split("\n\n", 2)[1]
    assert leaderboard.splitlines()[-1].endswith("| judge-alt |")  # the judge its verdicts name, not the header's
    assert "Each judge against itself" in markdown and "· grader openai-api/judge/judge-model" not in markdown


@pytest.mark.parametrize("transport", ["client", "inspect"])
def test_a_limit_learned_in_one_round_is_kept_for_the_next(transport, fake_server):
    # A check asks in rounds; each round passes the asker's one JudgeInputLimits. The `toolong`
    # judge (a server whose context cannot hold a request) refuses the first request it gets: in
    # the next round nothing is sent, each judgment failing as a request "not sent".
    import asyncio

    from clinconsensus_tasks.judge.input_limit import JudgeInputLimits
    from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PER_CRITERION

    case = CASES[0]
    doc = {**case.metadata(), "case_id": case.case_id, "question": case.question,
           "rubrics": [{"criterion_id": cid, "criterion": text} for cid, text in case.rubrics[:3]]}
    answer = candidate_answer(case.question)
    limits = JudgeInputLimits()
    if transport == "client":
        from clinconsensus_tasks.judge.client import JudgeSettings, judge_documents

        settings = JudgeSettings(model="judge-toolong", base_url=fake_server.base_url, api_key="k", use_cache=False, batch=False)

        def round_():
            return asyncio.run(judge_documents([answer], [doc], settings, PER_CRITERION, limits=limits))[0]
    else:
        from inspect_ai.model import get_model

        from clinconsensus_tasks.judge.inspect_calls import judge_decoding, judge_documents_inspect

        model = get_model("openai-api/judge/judge-toolong", memoize=False)
        decoding = judge_decoding(PER_CRITERION, 3, None, False)

        def round_():
            return asyncio.run(judge_documents_inspect(model, [answer], [doc], PER_CRITERION, None, decoding,
                                                       limits=limits))
    fake_server.reset()
    first = round_()
    sent = fake_server.stats()["kinds"].get("per_criterion", 0)
    second = round_()
    assert sent >= 1 and fake_server.stats()["kinds"].get("per_criterion", 0) == sent  # the second round sent nothing
    assert all(j.met is None and j.error_kind == "request" for g in (*first, *second) for j in g.headline.judgments)
    assert all(j.error.endswith("; not sent") for j in second[0].headline.judgments)


def test_a_judge_key_missing_from_the_shell_stops_the_check_in_one_line_and_the_tables_say_what_was_drawn(
        fake_server, tmp_path, capsys, monkeypatch):
    # issue 58, item 8c and 8e: an Inspect run's judge is bound again from its header, its key from the
    # shell; without it, one plain line naming the variable (no Rich markup, no traceback), exit 2 as
    # every configuration error, before any plan is printed or any file written.
    log, _ = run_inspect(tmp_path / "logs", judge="judge-model")
    out = tmp_path / "check"
    monkeypatch.delenv("JUDGE_API_KEY")
    capsys.readouterr()
    assert main(["reliability", log.location, "--output", str(out), "--transforms", "none"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "clinconsensus-eval: error: JUDGE_API_KEY is not set in this shell: the run's grader judge openai-api/judge/judge-model reads "
        "its API key from it, as when the run was made; export JUDGE_API_KEY with the judge's API key and run the same command again"]
    assert not out.exists()
    # with the key: the tables' first lines say the cases drawn (all 12 the run holds, of the 30 asked
    # for by default) and the framework once
    monkeypatch.setenv("JUDGE_API_KEY", "test-key")
    assert main(["reliability", log.location, "--output", str(out), "--transforms", "none", "--resamples", "50"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        f"== reliability check {out}: 24 of 24 asks; repeat 2, 12 cases drawn (--cases 30: every case the runs hold), "
        "criteria per case all",
        "",
        f"-- cand-model (inspect, {log.location})"]
    assert main(["reliability", log.location, "--output", str(tmp_path / "five"), "--cases", "5", "--transforms", "none",
                 "--resamples", "50"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"== reliability check {tmp_path / 'five'}: 10 of 10 asks; repeat 2, 5 cases drawn, criteria per case all")
