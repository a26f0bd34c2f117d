"""Sentence-embedding similarity for CliMedBench's wrong-treatment detection (WTD).

The paper scores WTD answers by the cosine similarity between a SimCSE embedding of the answer and
one of the reference refutation. Here any sentence-transformers model serves, named by a hub id or
a local folder (Inspect ``-T similarity_model=...``, lm-eval ``CLIMEDBENCH_SIMILARITY_MODEL``); the
default is the public Chinese SimCSE checkpoint below at a pinned hub commit, written
``<hub id>@<revision>``, the form every run records with each WTD score. Another model, or another
revision of this one, is chosen the same way (``cyclone/simcse-chinese-roberta-wwm-ext@main``
follows the branch; a hub id without ``@`` is not pinned). ``clinconsensus-eval train-simcse``
fine-tunes one on your own medical text, as the paper did.

The model is loaded once per process and texts are embedded in batches. Inspect batches the answers
that arrive together, lm-eval embeds them all at once, and float32 results depend slightly on the
batch they were computed in (about 1e-8); the model therefore runs in float64 and cosines are
rounded to 9 decimals, so both frameworks give the same value for the same answer.

:func:`check_model` loads the model before any answer is generated (Inspect: when a task that
includes WTD is built; lm-eval: when WTD's dataset loads), so a missing model stops the run at once
with one message instead of after every answer, and a hub id is first looked up in the local cache
and then asked of the hub once, instead of a loader retrying an unreachable hub for minutes.
sentence-transformers (and torch) are imported only then: runs without WTD never import them.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any, Sequence

from clinconsensus_tasks import settings_table
from clinconsensus_tasks.errors import ConfigurationError

DEFAULT_SIMILARITY_MODEL = "cyclone/simcse-chinese-roberta-wwm-ext"
# The head of its main branch ("add readme only", 2 Sep 2021), on top of "simcse init version"
# (25a599c2d6e6c0bc5b575ecd2caa40d07dce6aba), the commit that holds the weights.
DEFAULT_SIMILARITY_REVISION = "871d7039a3fccd4869d545a25b63c545341ca7f4"
DEFAULT_SIMILARITY_SPEC = f"{DEFAULT_SIMILARITY_MODEL}@{DEFAULT_SIMILARITY_REVISION}"
ENV_SIMILARITY_MODEL = settings_table.setting("similarity_model").env
BATCH_SIZE = 64
DECIMALS = 9

_models: dict[str, Any] = {}
_lock = threading.Lock()


def configured_model(name: str | None = None) -> str:
    """The model a run uses, as it records it: ``name``, else ``$CLIMEDBENCH_SIMILARITY_MODEL``, else
    the pinned default ``<hub id>@<revision>``."""
    return name or settings_table.raw("similarity_model") or DEFAULT_SIMILARITY_SPEC


def hub_id_and_revision(model: str) -> tuple[str, str | None]:
    """``org/name@rev`` -> ``("org/name", "rev")``; a folder or a hub id without ``@`` -> ``(model, None)``."""
    if os.path.isdir(model) or "@" not in model:
        return model, None
    name, revision = model.rsplit("@", 1)
    return name, revision or None


class SimilarityModelUnavailable(ConfigurationError):
    """The similarity model cannot be used; ``reason`` says why (the message adds every way out)."""

    def __init__(self, model: str, reason: str):
        super().__init__(how_to_provide(model, reason))
        self.model = model
        self.reason = reason


def how_to_provide(model: str, reason: str) -> str:
    """The one message for a similarity model that cannot be used: what failed and every way out."""
    return (
        f"Could not load the similarity model {model!r} that CliMedBench's WTD scenario needs: {reason}. "
        "Give a sentence-transformers model that loads here: a local folder with Inspect "
        f"-T similarity_model=/path/to/model or lm-eval {ENV_SIMILARITY_MODEL}=/path/to/model; a hub id only "
        f"when the Hugging Face hub is reachable (the default is {DEFAULT_SIMILARITY_SPEC}: <hub id>@<revision>; set "
        "HF_HUB_OFFLINE=1 on a machine without the hub, so it is never tried). Or leave WTD out: Inspect "
        "-T scenarios=<the other codes>, lm-eval --tasks <the other climedbench_* tasks>. "
        "`clinconsensus-eval train-simcse` builds a model from your own medical text."
    )


def _hub_offline() -> bool:
    return settings_table.flag(os.environ.get("HF_HUB_OFFLINE"), "HF_HUB_OFFLINE")


def _check_hub_model(model: str) -> None:
    """For a name that is not a folder: it must be in the local hub cache (at its revision), or the
    hub must answer (one request, 10 s timeout) instead of a loader retrying an unreachable hub for minutes."""
    from huggingface_hub import HfApi, snapshot_download

    name, revision = hub_id_and_revision(model)
    try:
        snapshot_download(name, revision=revision, local_files_only=True)
        return
    except Exception:
        pass
    if _hub_offline():
        raise SimilarityModelUnavailable(model, "it is not a local folder, not in the Hugging Face cache, and HF_HUB_OFFLINE is set")
    try:
        HfApi().model_info(name, revision=revision, timeout=10)
    except Exception as exc:
        raise SimilarityModelUnavailable(
            model, f"it is not a local folder and the Hugging Face hub did not serve it ({type(exc).__name__}: {exc})"
        ) from exc


def check_model(name: str | None = None) -> str:
    """Load the configured similarity model now, before any answer is generated; return its name.

    Raises :class:`SimilarityModelUnavailable` (a ``ConfigurationError``) when it cannot be used.
    """
    model = configured_model(name)
    if model not in _models and not os.path.isdir(model):
        try:
            _check_hub_model(model)
        except ImportError:
            pass  # no huggingface_hub means no sentence-transformers: load_model says so
    load_model(model)
    return model


def load_model(name: str) -> Any:
    """The sentence-transformers model ``name`` (folder, hub id, or ``hub id@revision``), loaded once per process."""
    with _lock:
        if name in _models:
            return _models[name]
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise SimilarityModelUnavailable(
                name, f"sentence-transformers is not installed ({exc}): pip install 'clinconsensus-tasks[similarity]' (install torch first)"
            ) from exc
        try:
            hub_id, revision = hub_id_and_revision(name)
            model = SentenceTransformer(hub_id, revision=revision, device="cpu" if not _has_accelerator() else None)
        except Exception as exc:
            raise SimilarityModelUnavailable(name, f"{type(exc).__name__}: {exc}") from exc
        model.double()  # see the module docstring: batch-independent results
        _models[name] = model
        return model


def _has_accelerator() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


def cosine_similarities(answers: Sequence[str], references: Sequence[str], model_name: str, batch_size: int = BATCH_SIZE) -> list[float]:
    """Cosine similarity of each answer with its reference, embedding all texts in batches."""
    if len(answers) != len(references):
        raise ValueError("answers and references differ in length")
    if not answers:
        return []
    model = load_model(model_name)
    embeddings = model.encode(
        [a or "" for a in answers] + list(references),
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    n = len(answers)
    return [round(float(x), DECIMALS) for x in (embeddings[:n] * embeddings[n:]).sum(axis=1)]


class EmbeddingBatcher:
    """Gathers the similarity requests of concurrently scored samples into batches (Inspect).

    Inspect scores samples one at a time but concurrently; each WTD scorer call awaits
    :meth:`similarity`, and requests arriving within ``window`` seconds are embedded together in a
    worker thread, so the event loop is not blocked and the model sees real batches.
    """

    def __init__(self, model_name: str, window: float = 0.05, max_batch: int = BATCH_SIZE):
        self.model_name = model_name
        self.window = window
        self.max_batch = max_batch
        self._pending: list[tuple[str, str, asyncio.Future]] = []
        self._scheduled = False  # a flush is waiting out its window and will take what is pending
        self._encoding: asyncio.Lock | None = None
        self._tasks: set[asyncio.Task] = set()

    async def similarity(self, answer: str, reference: str) -> float:
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._pending.append((answer, reference, future))
        if len(self._pending) >= self.max_batch:
            self._spawn(self._flush())
        elif not self._scheduled:
            self._scheduled = True
            self._spawn(self._flush_later())
        return await future

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)  # keep a reference until done
        task.add_done_callback(self._tasks.discard)

    async def _flush_later(self) -> None:
        await asyncio.sleep(self.window)
        self._scheduled = False  # requests from now on schedule their own flush
        await self._flush()

    async def _flush(self) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            return
        if self._encoding is None:
            self._encoding = asyncio.Lock()
        try:
            async with self._encoding:  # one batch through the model at a time
                values = await asyncio.to_thread(
                    cosine_similarities, [b[0] for b in batch], [b[1] for b in batch], self.model_name
                )
        except Exception as exc:
            for _, _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for (_, _, future), value in zip(batch, values):
            if not future.done():
                future.set_result(value)
