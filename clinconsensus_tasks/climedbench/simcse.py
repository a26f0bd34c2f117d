"""Unsupervised SimCSE fine-tuning of a sentence-transformers model (``clinconsensus-eval train-simcse``).

CliMedBench's WTD similarity model is a SimCSE model fine-tuned on medical documents. Unsupervised
SimCSE pairs every sentence with itself: the two encodings differ only by dropout noise, and the
other sentences of the batch are the negatives. With sentence-transformers that is exactly
``MultipleNegativesRankingLoss`` over (text, text) pairs, trained with dropout on, which is what
this module runs. The corpus is a text file with one passage per line.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from clinconsensus_tasks.errors import ConfigurationError


def read_corpus(path: str | Path) -> list[str]:
    """Non-empty lines of ``path``, stripped, duplicates removed (first kept)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigurationError(f"corpus file not found: {path}")
    lines = list(dict.fromkeys(line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()))
    if len(lines) < 2:
        raise ConfigurationError(f"{path}: SimCSE needs at least two distinct passages (one per line), found {len(lines)}")
    return lines


def train_simcse(
    model: str,
    corpus: str | Path,
    output: str | Path,
    epochs: int = 1,
    batch_size: int = 64,
    learning_rate: float = 3e-5,
    max_seq_length: int = 128,
    temperature: float = 0.05,
    seed: int = 42,
) -> dict[str, Any]:
    """Fine-tune ``model`` (hub id or folder) on ``corpus``; save to ``output``; return the manifest.

    ``temperature`` is SimCSE's softmax temperature (the loss scale is its inverse, 20 for 0.05).
    """
    try:
        import datasets
        from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments

        try:  # sentence-transformers >= 6 moved the losses
            from sentence_transformers.sentence_transformer import losses
        except ImportError:
            from sentence_transformers import losses
    except ImportError as exc:
        raise ConfigurationError(f"train-simcse needs sentence-transformers: pip install 'clinconsensus-tasks[similarity]' ({exc})") from exc

    texts = read_corpus(corpus)
    output = Path(output)
    from clinconsensus_tasks.climedbench.similarity import hub_id_and_revision

    try:
        hub_id, revision = hub_id_and_revision(model)  # a pinned base model: <hub id>@<revision>
        encoder = SentenceTransformer(hub_id, revision=revision)
    except Exception as exc:
        raise ConfigurationError(f"could not load the base model {model!r}: {type(exc).__name__}: {exc}") from exc
    encoder.max_seq_length = max_seq_length
    train = datasets.Dataset.from_dict({"anchor": texts, "positive": texts})
    loss = losses.MultipleNegativesRankingLoss(encoder, scale=1.0 / temperature)
    args = SentenceTransformerTrainingArguments(
        output_dir=str(output / "checkpoints"),
        num_train_epochs=epochs,
        per_device_train_batch_size=batch_size,
        learning_rate=learning_rate,
        warmup_ratio=0.1,
        seed=seed,
        save_strategy="no",
        report_to="none",
        logging_steps=1,
        disable_tqdm=True,
    )
    started = time.time()
    trainer = SentenceTransformerTrainer(model=encoder, args=args, train_dataset=train, loss=loss)
    result = trainer.train()
    encoder.save(str(output))
    losses_seen = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    manifest = {
        "method": "unsupervised SimCSE (MultipleNegativesRankingLoss on (text, text) pairs, dropout noise)",
        "base_model": model,
        "corpus": str(corpus),
        "corpus_sha256": hashlib.sha256(Path(corpus).read_bytes()).hexdigest(),
        "passages": len(texts),
        "epochs": epochs,
        "batch_size": batch_size,
        "learning_rate": learning_rate,
        "max_seq_length": max_seq_length,
        "temperature": temperature,
        "seed": seed,
        "steps": int(result.global_step),
        "first_loss": losses_seen[0] if losses_seen else None,
        "last_loss": losses_seen[-1] if losses_seen else None,
        "seconds": round(time.time() - started, 1),
    }
    (output / "simcse_manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return manifest
