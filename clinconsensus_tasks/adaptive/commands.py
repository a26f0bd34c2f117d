"""The adaptive-testing commands: ``clinconsensus-eval cat calibrate | run | synthesize``.

* ``calibrate`` builds an item bank from per-item CliMedBench results of several models (Inspect
  logs, lm-eval sample files, or records from ``synthesize``).
* ``run`` tests one model adaptively: it asks one question at a time through Inspect's model API,
  scores the answer with the same scorers as the full tasks, updates the ability estimate and
  picks the next item (:class:`~clinconsensus_tasks.adaptive.engine.AdaptiveSession`). The state is
  written after every answer, so an interrupted run resumes without asking anything again.
* ``synthesize`` makes examinee records when few models' results exist, with the paper's loop
  between two models: one answers (generation), the other challenges the answer and gives its
  own (debate), the first revises (reflection). Each stage is a synthetic examinee.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from clinconsensus_tasks.adaptive.engine import AdaptiveSession, ItemBank, build_response_matrix, calibrate_bank
from clinconsensus_tasks.climedbench.dataset import ENV_DATA_DIR, SAMPLE, load_scenario, no_data
from clinconsensus_tasks.climedbench.logs import read_item_log
from clinconsensus_tasks.log_files import CLIMEDBENCH, benchmark_logs, is_file, is_lmeval_samples
from clinconsensus_tasks.storage import file_sha256, location, make_folder, open_binary, output_location, storage_errors, write_text
from clinconsensus_tasks.errors import ConfigurationError, DataValidationError
from clinconsensus_tasks.scorers.climedbench.item_result import ItemResult, item_key, score_item
from clinconsensus_tasks.scorers.climedbench.scenarios import SCENARIOS, SIMILARITY, build_prompt
from clinconsensus_tasks.scorers.irt import dichotomize

STATE_FORMAT = "clinconsensus-cat-run"

# -- reading per-item results ----------------------------------------------------------------------


def _logged_items(path: Path) -> Iterator[tuple[str, str, str, float | None]]:
    """Scored items of an Inspect log or lm-eval samples file; an unscored sample is a missing
    response (``None``), with a warning naming file and sample (see ``climedbench.logs``)."""
    log = read_item_log(path)
    log.warn_unscored()
    for result in log.results:
        yield log.model, result.key, result.metric, result.value
    for entry in log.unscored:
        yield log.model, entry.key, SCENARIOS[entry.scenario].metric, None


def _synthetic_items(path: Path) -> Iterator[tuple[str, str, str, float | None]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                r = json.loads(line)
                try:
                    yield r["examinee"], r["item"], r["metric"], r["value"]
                except KeyError as exc:
                    raise DataValidationError([f"{path}:{number}: field {exc.args[0]!r}: missing"]) from exc


def read_item_results(paths: Sequence[str]) -> list[tuple[str, str, str, float | None]]:
    """(model, item, metric, value) from Inspect logs, lm-eval sample files and synthesize output."""
    records = []
    for p in map(location, paths):
        if not is_file(p):
            raise FileNotFoundError(f"no such file: {p}")
        if p.suffix in (".eval", ".json") or is_lmeval_samples(p):
            records += list(_logged_items(p))
        elif p.suffix == ".jsonl":
            with storage_errors(p):
                records += list(_synthetic_items(p))
        else:
            raise ValueError(f"{p}: expected an Inspect log, an lm-eval samples_*.jsonl file or synthesize records")
    return records


def calibrate(paths: Sequence[str], output: str | Path, model: str = "3PL") -> ItemBank:
    paths = benchmark_logs(paths, CLIMEDBENCH)  # a folder or URL prefix: the CliMedBench logs in it
    records = read_item_results(paths)
    models, items, matrix = build_response_matrix(records)
    if len(models) < 2:
        raise DataValidationError([f"calibration needs results of at least two models (or synthetic examinees), found {len(models)}"])
    provenance = {
        "sources": [{"path": str(p), "sha256": file_sha256(p)} for p in paths],
        "models": models,
    }
    bank = calibrate_bank(matrix, items, [i.split(":", 1)[0] for i in items], model=model, provenance=provenance)
    bank.save(output)
    return bank



# -- asking one model ------------------------------------------------------------------------------


def _items_by_key(codes: Iterable[str], data_dir: str | None) -> dict[str, dict[str, Any]]:
    out = {}
    for code in codes:
        for item in load_scenario(code, data_dir, announce=False).items:
            out[item_key(code, item["id"])] = item
    return out


def _score_answer(code: str, item: dict[str, Any], answer: str, similarity_model: str | None) -> ItemResult:
    """Score one answer as the full tasks do; WTD embeds answer and reference (one pair, no batching)."""
    if SCENARIOS[code].kind != SIMILARITY or not answer.strip():
        return score_item(code, item, answer)
    from clinconsensus_tasks.climedbench.similarity import configured_model, cosine_similarities

    model = configured_model(similarity_model)
    cosine = cosine_similarities([answer], [item["answer"]], model)[0]
    return score_item(code, item, answer, cosine=cosine, similarity_model=model)


async def _score(model: Any, code: str, item: dict[str, Any], similarity_model: str | None) -> dict[str, Any]:
    from inspect_ai.model import GenerateConfig

    output = await model.generate(build_prompt(SCENARIOS[code], item), config=GenerateConfig(temperature=0.0))
    result = await asyncio.to_thread(_score_answer, code, item, output.completion, similarity_model)
    return {"answer": result.answer, "value": result.value, "parsed": result.parsed, "metric": result.metric}


def _write_json(path: Any, data: Any) -> None:
    """Write ``path`` whole or not at all: locally a temporary file renamed over it; at a URL one
    upload (an object store replaces an object only once the upload is complete)."""
    text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
    if not isinstance(path, Path):
        write_text(path, text)
        return
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # atomic: an interruption leaves the previous state intact


# What ``cat run`` and ``cat synthesize`` say without data: the sample is never used unasked.
CAT_NO_DATA = no_data(f"`--data-dir DIR` (or `{ENV_DATA_DIR}=DIR`)", f"`--data-dir {SAMPLE}`")


def chosen_items(data_dir: str | None) -> str:
    """The CliMedBench data an adaptive run or synthetic examinees answer: ``data_dir``, else
    ``CLIMEDBENCH_DATA_DIR`` (a folder, or ``sample`` on purpose); neither: :class:`ConfigurationError`
    with :data:`CAT_NO_DATA`, before any model is asked."""
    chosen = data_dir if data_dir is not None and str(data_dir).strip() else os.environ.get(ENV_DATA_DIR, "")
    if not chosen.strip():
        raise ConfigurationError(CAT_NO_DATA)
    return chosen.strip()


def run_adaptive(
    model_name: str,
    bank_path: str,
    output: str | Path,
    data_dir: str | None = None,
    similarity_model: str | None = None,
    **session_settings: Any,
) -> dict[str, Any]:
    """Test ``model_name`` adaptively on the bank; resume from ``output/state.json`` if present.

    Writes ``state.json`` (the session and every answer, after each step) and ``result.json``.
    """
    from inspect_ai.model import get_model

    data_dir = chosen_items(data_dir)
    bank = ItemBank.load(bank_path)
    output = output_location(output)  # a local folder or a URL prefix (a machine that takes over resumes from it)
    make_folder(output)
    state_path = output / "state.json"
    answers: dict[str, Any] = {}
    with storage_errors(state_path):
        resume = state_path.exists()
    if resume:
        with open_binary(state_path) as handle:
            state = json.loads(handle.read().decode("utf-8"))
        if state.get("format") != STATE_FORMAT or state.get("model") != model_name:
            raise ConfigurationError(f"{state_path}: a run of another model or format; use a new --output folder")
        saved = dict(state["session"])
        saved["settings"] = {**saved["settings"], **{k: v for k, v in session_settings.items() if k in ("max_items", "se_threshold")}}
        session = AdaptiveSession.from_dict(saved, bank)
        answers = state["answers"]
        print(f"[cat] resumed {state_path}: {len(session.answered)} item(s) already answered", file=sys.stderr)
    else:
        session = AdaptiveSession(bank, **session_settings)
    items = _items_by_key(bank.scenario_codes(), data_dir)
    missing = [k for k in bank.item_ids if k not in items]
    if missing:
        raise DataValidationError([f"{bank_path}: item {k!r} is not in the data ({'the bundled sample' if data_dir == SAMPLE else data_dir})" for k in missing[:10]])
    model = get_model(model_name)

    async def loop() -> None:
        while (key := session.next_item()) is not None:
            code = key.split(":", 1)[0]
            scored = await _score(model, code, items[key], similarity_model)
            correct = dichotomize(scored["metric"], scored["value"], bank.dichotomy_thresholds) == 1.0
            entry = session.record(key, correct)
            answers[key] = scored
            _write_json(state_path, {"format": STATE_FORMAT, "model": model_name, "session": session.to_dict(), "answers": answers})
            print(f"[cat] step {entry['step']}: {key} {'correct' if correct else 'wrong'}; theta {entry['theta']:.3f}, se {entry['se']}", file=sys.stderr)

    asyncio.run(loop())
    result = {
        "model": model_name,
        "bank": {"path": str(bank_path), "fingerprint": bank.fingerprint(), "items": len(bank)},
        "theta": session.theta,
        "se": session.se if math.isfinite(session.se) else None,
        "items_used": len(session.answered),
        "stop_reason": session.stop_reason,
        "predicted_scores": session.predicted_scores(),
        "predicted_overall": session.predicted_overall(),
        "items": [k for k, _ in session.answered],
        "steps": session.step_log,
    }
    _write_json(output / "result.json", result)
    return result


# -- synthetic examinees ------------------------------------------------------------------------------

_DEBATE = (
    "下面是一道临床题目和另一位医生给出的回答。请指出该回答中的错误或不足，并按照题目要求的格式给出你自己的答案。\n\n"
    "【题目】\n{prompt}\n\n【另一位医生的回答】\n{answer}"
)
_REFLECT = (
    "下面是一道临床题目、你先前的回答，以及另一位医生的质疑。请反思后按照题目要求的格式给出最终答案。\n\n"
    "【题目】\n{prompt}\n\n【你先前的回答】\n{answer}\n\n【质疑】\n{critique}"
)


def synthesize(
    generator: str, debater: str, output: str | Path, data_dir: str | None = None,
    scenarios: Sequence[str] | None = None, limit: int | None = None, similarity_model: str | None = None,
) -> dict[str, int]:
    """Run generation -> debate -> reflection on the items; write one record per examinee and item.

    Examinees: ``<generator>/generation``, ``<debater>/debate``, ``<generator>/reflection``.
    Records are ``{"examinee", "item", "scenario", "metric", "value", "answer"}`` JSONL lines that
    ``cat calibrate`` reads next to real models' logs.
    """
    from inspect_ai.model import GenerateConfig, get_model

    data_dir = chosen_items(data_dir)
    codes = list(scenarios or SCENARIOS)
    gen, deb = get_model(generator), get_model(debater)
    config = GenerateConfig(temperature=0.0)
    work = [(code, item) for code in codes for item in load_scenario(code, data_dir, announce=False).items[: limit or None]]

    async def one(code: str, item: dict[str, Any]) -> list[dict[str, Any]]:
        prompt = build_prompt(SCENARIOS[code], item)
        first = (await gen.generate(prompt, config=config)).completion
        critique = (await deb.generate(_DEBATE.format(prompt=prompt, answer=first), config=config)).completion
        final = (await gen.generate(_REFLECT.format(prompt=prompt, answer=first, critique=critique), config=config)).completion
        out = []
        for examinee, answer in ((f"{generator}/generation", first), (f"{debater}/debate", critique), (f"{generator}/reflection", final)):
            out.append({"examinee": examinee, "item": item_key(code, item["id"]), "scenario": code,
                        "metric": SCENARIOS[code].metric, "value": _score_answer(code, item, answer, similarity_model).value, "answer": answer})
        return out

    async def everything() -> list[list[dict[str, Any]]]:
        return await asyncio.gather(*(one(code, item) for code, item in work))

    rows = [r for group in asyncio.run(everything()) for r in group]
    write_text(output_location(output), "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))  # a local file or a URL
    return {"items": len(work), "records": len(rows), "examinees": 3}
