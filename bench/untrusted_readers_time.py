"""Time of the readers of a model's answer on adversarial answers of 4 KB, 32 KB, 256 KB and 1 MB.

The answer under review is written by the model under test, so it can be any size and any shape
(issue 34 item 1). Each reader below must read it in time linear in its length and never raise:

* ``suspect_reasons`` and ``fence_answer`` (scorers/clinconsensus/answer_guard.py), with the
  project's per-criterion judge prompt as the prompt in use;
* ``extract_choice`` (CliMedBench choice questions), ``score_order`` (order answers, Kendall's
  tau), ``keyword_rouge1`` (keyword answers, ROUGE-1) and ``final_answer`` (what the rules read
  under the CoT variant), all in scorers/climedbench/.

The forms are built to defeat the readers' regular expressions: long runs of one character,
repeated prefixes of the patterns, many candidate markers, nested brackets, long white-space
runs, one line of the whole size or many short lines, full-width letters, random CJK, escapes.
A size is in characters (1 MB = 2**20 characters). A reader that turns out super-linear on a form
would run for hours at 1 MB, so each form is timed on sizes doubling from 256 characters, and the
next size is skipped when the growth seen so far predicts more than ``--budget`` seconds for it;
a skipped size prints as ``>budget`` with the prediction. Only 4 KB, 32 KB, 256 KB and 1 MB print.

Usage: python bench/untrusted_readers_time.py [--budget 20] [--readers suspect_reasons,extract_choice]
The last line printed is one JSON object {reader: {form: {size: seconds or null (skipped)}}}.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from typing import Callable

from clinconsensus_tasks.scorers.climedbench.choice import extract_choice
from clinconsensus_tasks.scorers.climedbench.ordering import score_order
from clinconsensus_tasks.scorers.climedbench.rouge_zh import keyword_rouge1
from clinconsensus_tasks.scorers.climedbench.variants import COT, final_answer
from clinconsensus_tasks.scorers.clinconsensus.answer_guard import fence_answer, suspect_reasons
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PER_CRITERION, prompt_fixed_text

SIZES = {"4KB": 1 << 12, "32KB": 1 << 15, "256KB": 1 << 18, "1MB": 1 << 20}
LETTERS = "ABCDE"
PROMPT = prompt_fixed_text(PER_CRITERION)

READERS: dict[str, Callable[[str], object]] = {
    "suspect_reasons": lambda text: suspect_reasons(text, PROMPT),
    "fence_answer": fence_answer,
    "extract_choice": lambda text: extract_choice(text, LETTERS),
    "score_order": lambda text: score_order(text, "DCBAE"),
    "keyword_rouge1": lambda text: keyword_rouge1(text, ["高血压", "ACEI", "低盐饮食"]),
    "final_answer(cot)": lambda text: final_answer(text, COT),
}


def repeat(unit: str, n: int) -> str:
    """``unit`` repeated to exactly ``n`` characters."""
    return (unit * (n // len(unit) + 1))[:n]


def run(head: str, fill: str, tail: str) -> Callable[[int], str]:
    """``head``, then ``fill`` repeated, then ``tail``: ``n`` characters in all."""
    return lambda n: head + repeat(fill, max(n - len(head) - len(tail), 0)) + tail


def cjk(n: int) -> str:
    rng = random.Random(34)
    return "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(n))


def fullwidth(n: int) -> str:
    rng = random.Random(34)
    return "".join(rng.choice("ＡＢＣＤＥ．：（）　") for _ in range(n))


FORMS: dict[str, Callable[[int], str]] = {
    # long runs of one character, one line of the whole size
    "one letter": run("", "A", ""),
    "spaces": run("", " ", ""),
    "spaces then letter": run("", " ", "x"),
    # many short lines
    "empty lines": run("", "\n", ""),
    "short heading lines": run("", "# a\n", ""),
    # a pattern's head then a long run that never completes it
    "answer marker, spaces, no letter": run("答案", " ", "!"),
    "answer marker, brackets, no letter": run("答案：", "(", "!"),
    "md heading, spaces run": run("# a", " ", "b"),
    "cjk heading, spaces run": run("【a", " ", "b"),
    "section marker, spaces run": run("【", " ", "x"),
    "close tag, spaces run": run("</", " ", "x"),
    "verdict key, spaces run": run("criteria", " ", "x"),
    # repeated prefixes of the patterns, many candidate markers
    "answer markers": run("", "答案", ""),
    "letter then answer markers": run("A", "答案", ""),
    "marked labels": run("", "答案：A.", ""),
    "option labels": run("", "A. B. ", ""),
    "standalone letters": run("", "A B ", ""),
    "degree letters": run("", "39°C ", ""),
    "answer word": run("", "answer ", ""),
    "section markers": run("", "【评分标准】", ""),
    "verdict keys": run("", '{"criteria_met": ', ""),
    "open tags": run("", "<think>", ""),
    "close tags": run("", "</思考>", ""),
    "open think, never closed": run("<think>", "a", ""),
    "delimiters": run("", "<<<", ""),
    # nested brackets
    "nested 【": run("", "【", ""),
    "nested [{": run("", "[{", ""),
    "nested (": run("", "(", ""),
    # escapes the guard decodes
    "unicode escapes": run("", "\\u0023", ""),
    "lone surrogate escapes": run("", "\\ud800", ""),
    "lone surrogates": run("", "\ud800", ""),
    # scripts
    "full-width letters": fullwidth,
    "random CJK": cjk,
}


def timed(reader: Callable[[str], object], text: str) -> float:
    start = time.perf_counter()
    reader(text)
    return time.perf_counter() - start


def curve(reader: Callable[[str], object], form: Callable[[int], str], budget: float) -> dict[str, float | None]:
    """Seconds at each size of SIZES (None: skipped, its prediction over ``budget``), and the prediction."""
    out: dict[str, float | None] = {}
    last_t, n, growth = 0.0, 256, 2.0
    while n <= max(SIZES.values()):
        predicted = last_t * growth
        if predicted > budget:
            out.update({name: None for name, size in SIZES.items() if size >= n})
            out["_predicted"] = predicted
            break
        try:
            t = timed(reader, form(n))
        except Exception as error:  # a reader must not raise: say so, and stop this form
            out["_raised"] = f"{type(error).__name__}: {error}"[:120]
            break
        if last_t > 1e-3:  # below a millisecond the ratio is noise
            growth = max(t / last_t, 2.0)
        last_t = t
        for name, size in SIZES.items():
            if size == n:
                out[name] = t
        n *= 2
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=20.0, help="skip a size predicted to take longer (s)")
    parser.add_argument("--readers", default=",".join(READERS), help="comma-separated reader names")
    args = parser.parse_args()
    results: dict[str, dict[str, dict[str, float | None]]] = {}
    for name in args.readers.split(","):
        reader = READERS[name]
        print(f"\n{name}")
        print(f"  {'form':<36}" + "".join(f"{size:>10}" for size in SIZES))
        results[name] = {}
        for form_name, form in FORMS.items():
            row = curve(reader, form, args.budget)
            predicted = row.pop("_predicted", None)
            raised = row.pop("_raised", None)
            cells = "".join(f"{t:>9.3f}s" if t is not None else f"{'>' + format(args.budget, 'g') + 's':>10}" for t in row.values())
            note = f"  (next predicted {predicted:.3g} s)" if predicted is not None else ""
            if raised:
                cells, note = "", f"  RAISES {raised}"
                row = {"raised": raised}
            results[name][form_name] = row
            print(f"  {form_name:<36}{cells}{note}", flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
