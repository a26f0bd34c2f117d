"""The command line reads well: every option has help and shows its default, no reST backticks
in --help, tables stay aligned with Chinese labels, and the stand-in server's --help names the
model-name words it reacts to."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

import pytest

from clinconsensus_tasks.cli import HelpFormatter, build_parser, main
from clinconsensus_tasks.commands.tables import display_width, format_table


def all_parsers(parser: argparse.ArgumentParser, path: str = "clinconsensus-eval"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from all_parsers(child, f"{path} {name}")


def listed_in_help(parser: argparse.ArgumentParser, path: str = "clinconsensus-eval"):
    """Every command path a user reads in ``--help`` (and in the commands' own ``--help``): the
    names argparse lists, indented by four, under the COMMAND or STEP heading."""
    yield path
    text = parser.format_help()
    for name in re.findall(r"^    (\S+)", text, flags=re.MULTILINE):
        child = next(c for a in parser._actions if isinstance(a, argparse._SubParsersAction) for n, c in a.choices.items() if n == name)
        yield from listed_in_help(child, f"{path} {name}")


def test_every_option_has_help_and_shows_its_default():
    parsers = list(all_parsers(build_parser()))
    # The walk checks every command and step a user can read about, and nothing is hidden from --help.
    assert [path for path, _ in parsers] == list(listed_in_help(build_parser()))
    assert {"clinconsensus-eval summarize", "clinconsensus-eval cat run", "clinconsensus-eval train-simcse",
            "clinconsensus-eval review export", "clinconsensus-eval review score"} <= {p for p, _ in parsers}
    assert "(default: 30)" in dict(parsers)["clinconsensus-eval review export"].format_help()  # the steps print defaults too
    for path, parser in parsers:
        text = parser.format_help()
        assert "`" not in text, path
        formatter = HelpFormatter(path)
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            assert action.help, f"{path} {action.dest}: no help"
            if action.option_strings and not action.required or action.nargs == "?":
                assert "default" in formatter._get_help_string(action).lower(), f"{path} {action.dest}: default not shown"


def test_defaults_are_shown_as_typed():
    help_text = " ".join(build_parser()._subparsers._group_actions[0].choices["summarize"].format_help().split())
    assert "CACS@k, comma-separated (default: 7,10)" in help_text
    assert "expected criteria per case, N (default: 30)" in help_text
    assert "print metrics in percent instead of fractions (the frameworks' scale) (default: off)" in help_text
    assert build_parser().parse_args(["summarize", "x.eval"]).thresholds == (7, 10)


def test_tables_stay_aligned_with_chinese_labels():
    lines = format_table(["label", "cases", "cacs@10"], [["心血管内科", "3", "0.2500"], ["overall", "12", "0.3611"], ["儿科（新生儿）", "1", "1.0000"]])
    assert lines == [
        "   label           cases  cacs@10",
        "   心血管内科          3   0.2500",
        "   overall            12   0.3611",
        "   儿科（新生儿）      1   1.0000",
    ]
    assert len({display_width(line) for line in lines}) == 1
    assert display_width("心a") == 3 and display_width("Ａ") == 2


def test_stand_in_server_help_lists_its_model_names():
    done = subprocess.run([sys.executable, "-m", "clinconsensus_tasks.stand_in", "--help"],
                          capture_output=True, text=True, check=True, timeout=60)
    text = done.stdout
    assert "`" not in text
    for word, meaning in [("empty", "candidate answers with empty content"), ("unauthorized", "HTTP 401"),
                          ("flaky", "HTTP 429 or 500"), ("alt", "disagrees"), ("examinee", "depend on the model name")]:
        line = next(line for line in text.splitlines() if line.strip().startswith(word + " "))
        assert meaning in line, word
    assert "(default: 0.0)" in text and "0 picks a free one (default: 0)" in text


def test_the_stand_in_server_is_a_command_of_its_own():
    """``clinconsensus-eval serve-stand-in`` serves the demo's stand-in model and judge over real
    HTTP (stands in for a user trying the commands before they have an endpoint)."""
    import json
    import urllib.request

    assert "serve-stand-in" in build_parser().format_help()
    proc = subprocess.Popen([sys.executable, "-m", "clinconsensus_tasks.cli", "serve-stand-in"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline().split()[1])  # "PORT <n>" once it listens
        body = json.dumps({"model": "demo-model", "messages": [{"role": "user", "content": "头痛三天怎么办？"}]}).encode()
        with urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", body), timeout=30) as reply:
            answer = json.loads(reply.read())
        assert answer["model"] == "demo-model" and answer["choices"][0]["message"]["content"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.parametrize("command", [["rescore", "run.eval", "--output", "out.eval"], ["summarize", "--strict", "logs"],
                                     ["compare-models", "a.eval", "b.eval"]])
def test_a_bad_failure_threshold_is_named_as_the_flag_it_came_in(command, capsys):
    # It was reported under CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD, the variable the flag stands over.
    with pytest.raises(SystemExit) as stop:
        main([*command, "--judge-failure-threshold", "abc"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "argument --judge-failure-threshold: --judge-failure-threshold='abc': expected a share" in err
    assert "CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD" not in err


def test_every_release_gate_option_without_strict_is_an_error_not_ignored(tmp_path, capsys):
    # Each option of the gate, given to plain summarize, would otherwise be read by nothing.
    from clinconsensus_tasks.commands.summarize import GATE_ONLY

    values = {"--judge-failure-threshold": "0.02", "--allow-prompt": "jury", "--data-sha256": "ab" * 32, "--review": str(tmp_path),
              "--min-kappa": "0.6", "--max-judge-bias": "2", "--reliability": str(tmp_path), "--max-flip-rate": "0.1"}
    assert set(values) == set(GATE_ONLY) and "--strict" not in GATE_ONLY
    for flag, value in values.items():
        assert main(["summarize", flag, value, str(tmp_path)]) == 2
        assert capsys.readouterr().err.strip() == f"clinconsensus-eval: error: {flag} belongs to the release gate: add --strict"
    assert main(["summarize", "--max-flip-rate", "0.1", "--min-kappa", "0.6", str(tmp_path)]) == 2
    assert "--min-kappa, --max-flip-rate belong to the release gate" in capsys.readouterr().err
    # With --strict, a bar without the folder it reads is named with that folder's flag.
    for flag, needed in (("--min-kappa", "--review"), ("--max-judge-bias", "--review"), ("--max-flip-rate", "--reliability")):
        assert main(["summarize", "--strict", flag, "0.1", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"clinconsensus-eval: error: {flag} needs ") and err.strip().endswith(f": {needed} DIR")


@pytest.mark.parametrize("command", [["summarize", "--strict", "logs"], ["compare-models", "a.eval", "b.eval"]])
def test_the_gates_failure_share_is_checked_by_the_gates_rule_as_it_is_read(command, capsys):
    # 1 (or 100%) is a run's "stop at every failure" but no bar for a gate: refused as the flag is read,
    # before any run is looked for; 0 is a bar (no judgment may fail).
    for value in ("1", "100%", "-0.1"):
        with pytest.raises(SystemExit) as stop:
            main([*command, "--judge-failure-threshold", value])
        assert stop.value.code == 2 and "the share of judgments that may fail, in [0, 1)" in capsys.readouterr().err
    assert build_parser().parse_args([*command, "--judge-failure-threshold", "0"]).judge_failure_threshold == 0.0
    assert build_parser().parse_args([*command, "--judge-failure-threshold", "2%"]).judge_failure_threshold == 0.02


def test_compare_models_reads_thresholds_as_every_command_does(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["compare-models", "a.eval", "b.eval", "--thresholds", "7,x"])
    assert stop.value.code == 2 and "argument --thresholds: thresholds='7,x': expected integers such as 7,10" in capsys.readouterr().err
    assert build_parser().parse_args(["compare-models", "a.eval", "b.eval"]).thresholds == (7, 10)
