"""Adaptive CliMedBench runs: a calibrated item bank and a resumable adaptive-testing session.

Scoring a model on all 33,735 CliMedBench items is slow and costly; CliMedBench itself ranks models
from 243 adaptively chosen items (3PL model, maximum-information selection). This module is the
framework-free engine for that: :class:`ItemBank` holds calibrated items and persists them as a
versioned JSON file, :func:`build_response_matrix` and :func:`calibrate_bank` make a bank from
scored runs of reference models, and :class:`AdaptiveSession` asks one model item by item. It
imports no framework (no Inspect, no lm-eval); it sits here rather than in ``scorers/`` because it
reads and writes bank and session files. The session never calls a model: a driver (the Inspect command) asks for :meth:`AdaptiveSession.next_item`,
scores the answer with the shared scorers, dichotomises it and :meth:`AdaptiveSession.record`s
it. Its step log is JSON, so an interrupted run resumes exactly where it stopped, without asking
any item again. The maths lives in :mod:`clinconsensus_tasks.scorers.irt`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from clinconsensus_tasks.errors import DataValidationError
from clinconsensus_tasks.scorers import irt
from clinconsensus_tasks.scorers.climedbench.scenarios import CHOICE, SCENARIOS
from clinconsensus_tasks.scorers.irt import DICHOTOMY_THRESHOLDS, dichotomize
from clinconsensus_tasks.storage import location, output_location, storage_errors, write_text

BANK_FORMAT = "clinconsensus-cat-bank"
BANK_VERSION = 1
SESSION_FORMAT = "clinconsensus-cat-session"
SESSION_VERSION = 1
ESTIMATORS = ("EAP", "MLE")
#: Scenario kinds whose items get a free guessing parameter under 3PL. Choice questions can be
#: passed by guessing a letter; keyword and similarity answers cannot. Ordering could, a little
#: (a random order of 4 steps reaches tau >= 0.5 one time in six), but CliMedBench's ordering
#: scenarios are small (567 items) and the bank treats them like the other continuous scores.
GUESSING_KINDS: frozenset[str] = frozenset({CHOICE})


class ItemBankError(DataValidationError):
    """An item bank file that cannot be used; each problem names the file and the field."""


# --------------------------------------------------------------------------- item bank


@dataclass(eq=False)
class ItemBank:
    """Calibrated items: ids, scenario codes and IRT parameters, plus where they came from.

    ``index`` maps item id to position. Compare banks with :meth:`fingerprint`.
    """

    item_ids: list[str]
    scenarios: list[str]
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    model: str = "3PL"
    dichotomy_thresholds: dict[str, float] = field(default_factory=lambda: dict(DICHOTOMY_THRESHOLDS))
    provenance: dict[str, Any] = field(default_factory=dict)
    version: int = BANK_VERSION

    def __post_init__(self) -> None:
        self.item_ids = [str(i) for i in self.item_ids]
        self.scenarios = [str(s) for s in self.scenarios]
        self.a, self.b, self.c = (np.array(x, dtype=float, ndmin=1) for x in (self.a, self.b, self.c))
        n = len(self.item_ids)
        problems = [
            f"{name}: {len(value)} entries for {n} items"
            for name, value in (("scenarios", self.scenarios), ("a", self.a), ("b", self.b), ("c", self.c))
            if len(value) != n
        ]
        if self.model not in irt.MODELS:
            problems.append(f"model: must be one of {', '.join(irt.MODELS)}, got {self.model!r}")
        dupes = _duplicates(self.item_ids)
        if dupes:
            problems.append(f"item_ids: duplicated ids {dupes[:5]}")
        if not problems:
            problems += _parameter_problems(self.a, self.b, self.c, self.item_ids)
        if problems:
            raise ItemBankError(problems)
        self.index: dict[str, int] = {item: i for i, item in enumerate(self.item_ids)}

    def __len__(self) -> int:
        return len(self.item_ids)

    def scenario_codes(self) -> list[str]:
        """Scenario codes in the bank, in first-seen order."""
        return list(dict.fromkeys(self.scenarios))

    def fingerprint(self) -> str:
        """A short hash of the ids and parameters: a session checks it resumes on the same bank."""
        h = hashlib.sha256()
        h.update("\n".join(f"{i}\t{s}" for i, s in zip(self.item_ids, self.scenarios)).encode())
        for arr in (self.a, self.b, self.c):
            h.update(np.ascontiguousarray(arr, dtype="<f8").tobytes())
        return h.hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": BANK_FORMAT,
            "version": self.version,
            "model": self.model,
            "items": [
                {"id": i, "scenario": s, "a": float(a), "b": float(b), "c": float(c)}
                for i, s, a, b, c in zip(self.item_ids, self.scenarios, self.a, self.b, self.c)
            ],
            "dichotomy_thresholds": dict(self.dichotomy_thresholds),
            "provenance": self.provenance,
        }

    def save(self, path: str | Path) -> Path:
        """Write the bank as JSON (one item per line, floats exactly round-tripped)."""
        path = output_location(path)  # a local file or a URL
        data = self.to_dict()
        items = data.pop("items")
        head = json.dumps(data, ensure_ascii=False, indent=1)
        body = ",\n".join("  " + json.dumps(item, ensure_ascii=False) for item in items)
        write_text(path, head[:-2] + ',\n "items": [\n' + body + "\n ]\n}\n")
        return path

    @classmethod
    def from_dict(cls, data: Any, source: str = "<dict>") -> "ItemBank":
        """A bank from its JSON form; problems are reported as ``source: field: what is wrong``."""
        if not isinstance(data, dict):
            raise ItemBankError([f"{source}: top level: expected a JSON object, got {type(data).__name__}"])
        problems: list[str] = []
        if data.get("format") != BANK_FORMAT:
            raise ItemBankError([f"{source}: format: expected {BANK_FORMAT!r}, got {data.get('format')!r}"])
        version = data.get("version")
        if not isinstance(version, int) or isinstance(version, bool):
            problems.append(f"{source}: version: expected an integer, got {version!r}")
        elif version > BANK_VERSION:
            problems.append(f"{source}: version: {version} is newer than this reader ({BANK_VERSION}); upgrade the package")
        elif version < 1:
            problems.append(f"{source}: version: must be >= 1, got {version}")
        model = data.get("model")
        if model not in irt.MODELS:
            problems.append(f"{source}: model: must be one of {', '.join(irt.MODELS)}, got {model!r}")
        thresholds = data.get("dichotomy_thresholds", dict(DICHOTOMY_THRESHOLDS))
        if not isinstance(thresholds, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in thresholds.values()
        ):
            problems.append(f"{source}: dichotomy_thresholds: expected an object of metric -> number")
        provenance = data.get("provenance", {})
        if not isinstance(provenance, dict):
            problems.append(f"{source}: provenance: expected an object")
        items = data.get("items")
        ids: list[str] = []
        scenarios: list[str] = []
        params: list[list[float]] = []
        if not isinstance(items, list) or not items:
            problems.append(f"{source}: items: expected a non-empty list")
            items = []
        for k, item in enumerate(items):
            where = f"{source}: items[{k}]"
            if not isinstance(item, dict):
                problems.append(f"{where}: expected an object")
                continue
            row: list[float] = []
            for name in ("id", "scenario"):
                value = item.get(name)
                if not isinstance(value, str) or not value:
                    problems.append(f"{where}.{name}: expected a non-empty string, got {value!r}")
            for name in ("a", "b", "c"):
                value = item.get(name)
                if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                    problems.append(f"{where}.{name}: expected a finite number, got {value!r}")
                    value = math.nan
                row.append(float(value))
            ids.append(str(item.get("id")))
            scenarios.append(str(item.get("scenario")))
            params.append(row)
        if not problems:
            arr = np.array(params, dtype=float).T
            problems += [f"{source}: {p}" for p in _parameter_problems(arr[0], arr[1], arr[2], ids, prefix="items")]
            dupes = _duplicates(ids)
            if dupes:
                problems.append(f"{source}: items.id: duplicated ids {dupes[:5]}")
        if problems:
            raise ItemBankError(problems)
        return cls(
            item_ids=ids,
            scenarios=scenarios,
            a=arr[0],
            b=arr[1],
            c=arr[2],
            model=model,
            dichotomy_thresholds={str(k): float(v) for k, v in thresholds.items()},
            provenance=provenance,
            version=version,
        )

    @classmethod
    def load(cls, path: str | Path) -> "ItemBank":
        """Read a bank written by :meth:`save`; raises :class:`ItemBankError` naming file and field."""
        path = location(path)  # a local file or a URL
        try:
            with storage_errors(path):
                text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ItemBankError([f"{path}: cannot read the file ({exc.strerror or exc})"]) from exc
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ItemBankError([f"{path}: line {exc.lineno} column {exc.colno}: not valid JSON ({exc.msg})"]) from exc
        return cls.from_dict(data, source=str(path))


def _duplicates(ids: Sequence[str]) -> list[str]:
    return sorted(i for i, n in Counter(ids).items() if n > 1)


def _parameter_problems(a, b, c, ids: Sequence[str], prefix: str = "items") -> list[str]:
    """Out-of-range parameters (at most five reported per parameter)."""
    problems = []
    for name, values, ok, rule in (
        ("a", a, np.isfinite(a) & (a > 0), "a finite number > 0"),
        ("b", b, np.isfinite(b), "a finite number"),
        ("c", c, np.isfinite(c) & (c >= 0) & (c < 1), "a number in [0, 1)"),
    ):
        for k in np.flatnonzero(~ok)[:5]:
            problems.append(f"{prefix}[{k}].{name}: must be {rule}, got {float(values[k])!r} (item {ids[k]!r})")
    return problems


# --------------------------------------------------------------------------- calibration


def build_response_matrix(
    records: Iterable[tuple[str, str, str, float | None]],
    thresholds: Mapping[str, float] = DICHOTOMY_THRESHOLDS,
) -> tuple[list[str], list[str], np.ndarray]:
    """``(models, item_ids, matrix)`` from ``(model_name, item_id, metric, value)`` records.

    Values are dichotomised (:func:`~clinconsensus_tasks.scorers.irt.dichotomize`): accuracy stays
    0/1, ``kendall_tau``/``rouge1``/``similarity`` pass at their threshold. Cells with no record, or
    a ``None``/NaN value, are NaN. Models and items keep first-seen order. A repeated
    (model, item) pair is an error: average repeated runs before, or keep one.
    """
    models: dict[str, int] = {}
    items: dict[str, int] = {}
    cells: dict[tuple[int, int], float] = {}
    for n, record in enumerate(records):
        try:
            model, item, metric, value = record
        except (TypeError, ValueError) as exc:
            raise ValueError(f"record {n}: expected (model, item_id, metric, value), got {record!r}") from exc
        row = models.setdefault(str(model), len(models))
        col = items.setdefault(str(item), len(items))
        if (row, col) in cells:
            raise ValueError(f"record {n}: a second value for model {model!r}, item {item!r}")
        try:
            cells[(row, col)] = dichotomize(str(metric), value, thresholds)
        except ValueError as exc:
            raise ValueError(f"record {n} (model {model!r}, item {item!r}): {exc}") from exc
    matrix = np.full((len(models), len(items)), np.nan)
    for (row, col), value in cells.items():
        matrix[row, col] = value
    return list(models), list(items), matrix


def calibrate_bank(
    matrix: Any,
    item_ids: Sequence[str],
    scenarios: Sequence[str],
    model: str = "3PL",
    provenance: Mapping[str, Any] | None = None,
    *,
    thresholds: Mapping[str, float] = DICHOTOMY_THRESHOLDS,
    **fit_kwargs: Any,
) -> ItemBank:
    """Fit ``model`` to a ``(models, items)`` 1/0/NaN matrix and return the bank.

    Under 3PL only items of :data:`GUESSING_KINDS` scenarios get a free ``c``; the rest keep
    ``c = 0``. ``provenance`` (e.g. the reference models and the data revision) is stored with a
    ``calibration`` entry describing the fit.
    """
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2 or matrix.shape[1] != len(item_ids) or len(scenarios) != len(item_ids):
        raise ValueError(
            f"matrix shape {matrix.shape} does not match {len(item_ids)} item ids and {len(scenarios)} scenarios"
        )
    unknown = sorted(set(scenarios) - set(SCENARIOS))
    if unknown:
        raise ValueError(f"unknown scenario codes {unknown}; known: {', '.join(SCENARIOS)}")
    free_c = np.array([SCENARIOS[s].kind in GUESSING_KINDS for s in scenarios])
    if model == "3PL":
        fit_kwargs.setdefault("free_c", free_c)
    fitted = irt.fit_items(matrix, model=model, **fit_kwargs)
    answered = ~np.isnan(matrix)
    record = dict(provenance or {})
    record["calibration"] = {
        "method": "marginal maximum likelihood (EM), N(0,1) population",
        "model": model,
        "priors": dict(fitted.priors),
        "guessing_free_for_kinds": sorted(GUESSING_KINDS) if model == "3PL" else [],
        "models": int(matrix.shape[0]),
        "items": int(matrix.shape[1]),
        "responses": int(answered.sum()),
        "iterations": fitted.iterations,
        "converged": fitted.converged,
        "log_likelihood": fitted.log_likelihood,
    }
    return ItemBank(
        item_ids=list(item_ids),
        scenarios=list(scenarios),
        a=fitted.a,
        b=fitted.b,
        c=fitted.c,
        model=model,
        dichotomy_thresholds=dict(thresholds),
        provenance=record,
    )


# --------------------------------------------------------------------------- adaptive session


class AdaptiveSession:
    """One model's adaptive test on a bank: pick, record, re-estimate, stop.

    Items are chosen by maximum Fisher information at the current estimate (optionally
    randomesque among the top ``randomesque`` items, drawn from a generator seeded by
    ``(seed, step)`` so a resumed run draws exactly as the original). The test stops when
    ``max_items`` answers are in, when the standard error reaches ``se_threshold`` (checked after
    at least ``min_items`` answers), or when the bank is exhausted. With no rule given it runs the
    whole bank.
    """

    def __init__(
        self,
        bank: ItemBank,
        *,
        estimator: str = "EAP",
        max_items: int | None = None,
        se_threshold: float | None = None,
        min_items: int = 1,
        randomesque: int = 1,
        seed: int = 0,
        prior_mean: float = 0.0,
        prior_sd: float = 1.0,
    ) -> None:
        estimator = estimator.upper()
        if estimator not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
        if max_items is not None and max_items < 1:
            raise ValueError(f"max_items must be at least 1, got {max_items}")
        if se_threshold is not None and not se_threshold > 0:
            raise ValueError(f"se_threshold must be positive, got {se_threshold}")
        if randomesque < 1:
            raise ValueError(f"randomesque must be at least 1, got {randomesque}")
        self.bank = bank
        self.estimator = estimator
        self.max_items = max_items
        self.se_threshold = se_threshold
        self.min_items = max(1, int(min_items))
        self.randomesque = int(randomesque)
        self.seed = int(seed)
        self.prior_mean = float(prior_mean)
        self.prior_sd = float(prior_sd)
        self.answered: list[tuple[str, bool]] = []
        self.step_log: list[dict[str, Any]] = []
        self._used = np.zeros(len(bank), dtype=bool)
        self._order: list[int] = []
        self._correct: list[float] = []
        self._pending: str | None = None
        self._theta, self._se = self._estimate()

    # ---- state
    @property
    def theta(self) -> float:
        """Current ability estimate."""
        return self._theta

    @property
    def se(self) -> float:
        """Its standard error (EAP: posterior SD; MLE: 1/sqrt(test information), inf when empty)."""
        return self._se

    @property
    def stop_reason(self) -> str | None:
        """``"max_items"``, ``"se_threshold"``, ``"bank_exhausted"`` or None while running."""
        n = len(self.answered)
        if self.max_items is not None and n >= self.max_items:
            return "max_items"
        if self.se_threshold is not None and n >= self.min_items and self._se <= self.se_threshold:
            return "se_threshold"
        if n >= len(self.bank):
            return "bank_exhausted"
        return None

    @property
    def stopped(self) -> bool:
        return self.stop_reason is not None

    def _estimate(self) -> tuple[float, float]:
        idx = np.asarray(self._order, dtype=np.intp)
        theta, se = irt.estimate_theta(
            np.asarray(self._correct, dtype=float),
            self.bank.a[idx],
            self.bank.b[idx],
            self.bank.c[idx],
            method=self.estimator,
            prior_mean=self.prior_mean,
            prior_sd=self.prior_sd,
        )
        return float(theta), float(se)

    # ---- the loop
    def next_item(self) -> str | None:
        """The item to ask next, or None once a stopping rule holds. Repeated calls agree."""
        if self.stopped:
            return None
        if self._pending is None:
            step = len(self.answered) + 1
            rng = np.random.default_rng([self.seed, step]) if self.randomesque > 1 else None
            k = irt.select_next_item(
                self._theta, self.bank.a, self.bank.b, self.bank.c, self._used, randomesque=self.randomesque, rng=rng
            )
            self._pending = self.bank.item_ids[k]
        return self._pending

    def record(self, item_id: str, correct: bool) -> dict[str, Any]:
        """Record a (dichotomised) answer, update the estimate and return the new step-log entry.

        Any unused bank item may be recorded (normally the one :meth:`next_item` returned).
        """
        k = self.bank.index.get(str(item_id))
        if k is None:
            raise KeyError(f"item {item_id!r} is not in the bank")
        if self._used[k]:
            raise ValueError(f"item {item_id!r} was already answered")
        if self.stopped:
            raise ValueError(f"the session has stopped ({self.stop_reason}); no more answers are recorded")
        self._used[k] = True
        self._order.append(k)
        self._correct.append(1.0 if correct else 0.0)
        self.answered.append((self.bank.item_ids[k], bool(correct)))
        self._pending = None
        self._theta, self._se = self._estimate()
        entry = {
            "step": len(self.answered),
            "item_id": self.bank.item_ids[k],
            "scenario": self.bank.scenarios[k],
            "correct": bool(correct),
            "theta": self._theta,
            "se": self._se if math.isfinite(self._se) else None,
        }
        self.step_log.append(entry)
        return entry

    def predicted_scores(self) -> dict[str, float]:
        """Expected pass rate per scenario over the whole bank at the current ability estimate.

        For accuracy scenarios that is the expected accuracy; for continuous ones, the expected
        share of items reaching the dichotomy threshold (not the mean raw metric).
        """
        p = np.asarray(irt.icc(self._theta, self.bank.a, self.bank.b, self.bank.c))
        codes = np.asarray(self.bank.scenarios)
        return {code: float(p[codes == code].mean()) for code in self.bank.scenario_codes()}

    def predicted_overall(self) -> float:
        """Unweighted mean of :meth:`predicted_scores`, as CliMedBench averages its scenarios."""
        scores = self.predicted_scores()
        return sum(scores.values()) / len(scores)

    # ---- persistence
    def settings(self) -> dict[str, Any]:
        return {
            "estimator": self.estimator,
            "max_items": self.max_items,
            "se_threshold": self.se_threshold,
            "min_items": self.min_items,
            "randomesque": self.randomesque,
            "seed": self.seed,
            "prior_mean": self.prior_mean,
            "prior_sd": self.prior_sd,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready state: settings, the bank's fingerprint and the step log."""
        return {
            "format": SESSION_FORMAT,
            "version": SESSION_VERSION,
            "bank": {"fingerprint": self.bank.fingerprint(), "items": len(self.bank), "model": self.bank.model},
            "settings": self.settings(),
            "steps": [dict(entry) for entry in self.step_log],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], bank: ItemBank) -> "AdaptiveSession":
        """Resume a session from :meth:`to_dict` output by replaying its recorded answers.

        Nothing is asked again. Raises ``ValueError`` if the log belongs to another bank or its
        recorded estimates do not match the replay (a changed estimator or corrupted log).
        """
        if data.get("format") != SESSION_FORMAT:
            raise ValueError(f"format: expected {SESSION_FORMAT!r}, got {data.get('format')!r}")
        if data.get("version") != SESSION_VERSION:
            raise ValueError(f"version: this reader understands {SESSION_VERSION}, got {data.get('version')!r}")
        recorded = (data.get("bank") or {}).get("fingerprint")
        if recorded != bank.fingerprint():
            raise ValueError(
                f"bank: the session was run on bank {recorded!r}, this bank is {bank.fingerprint()!r}"
            )
        session = cls(bank, **dict(data.get("settings") or {}))
        for n, step in enumerate(data.get("steps") or []):
            if not isinstance(step, Mapping) or "item_id" not in step or not isinstance(step.get("correct"), bool):
                raise ValueError(f"steps[{n}]: expected an object with 'item_id' and a boolean 'correct', got {step!r}")
            if step.get("step") != n + 1:
                raise ValueError(f"steps[{n}].step: expected {n + 1}, got {step.get('step')!r}")
            entry = session.record(step["item_id"], step["correct"])
            logged = step.get("theta")
            if logged is not None and not math.isclose(entry["theta"], float(logged), rel_tol=1e-9, abs_tol=1e-9):
                raise ValueError(
                    f"steps[{n}].theta: the log says {logged}, replaying gives {entry['theta']} (settings changed?)"
                )
        return session
