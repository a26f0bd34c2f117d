"""WTD similarity with a real sentence-transformers model loaded offline, and train-simcse on a
tiny model built locally."""

from __future__ import annotations

import asyncio
import json

import pytest

from clinconsensus_tasks.climedbench import similarity
from clinconsensus_tasks.errors import ConfigurationError

from conftest import TINY_CORPUS


@pytest.mark.slow  # loads the sentence-transformers model (torch): tens of seconds on a busy machine
def test_cosine_values_batches_and_one_load(similarity_model_dir):
    model = str(similarity_model_dir)
    pairs = [("停用抗菌药物。", "停用抗菌药物。"), ("The treatment is wrong.", "This treatment is inappropriate."),
             ("The treatment is wrong.", "The weather is sunny today.")]
    values = similarity.cosine_similarities([a for a, _ in pairs], [b for _, b in pairs], model)
    assert values[0] == pytest.approx(1.0, abs=1e-5)
    assert values[1] > values[2] and -1.0 <= values[2] <= 1.0
    # One batch or one pair at a time: the same numbers, and the model is loaded once.
    singles = [similarity.cosine_similarities([a], [b], model)[0] for a, b in pairs]
    assert singles == pytest.approx(values, abs=1e-5)
    assert similarity.load_model(model) is similarity.load_model(model)


@pytest.mark.slow  # loads the sentence-transformers model (torch): tens of seconds on a busy machine
def test_batcher_groups_concurrent_requests(similarity_model_dir, monkeypatch):
    calls = []
    real = similarity.cosine_similarities

    def counting(answers, references, model_name, batch_size=similarity.BATCH_SIZE):
        calls.append(len(answers))
        return real(answers, references, model_name, batch_size)

    monkeypatch.setattr(similarity, "cosine_similarities", counting)
    batcher = similarity.EmbeddingBatcher(str(similarity_model_dir), window=0.05, max_batch=64)

    async def many():
        return await asyncio.gather(*(batcher.similarity(f"答案{i}", f"参考{i}") for i in range(10)))

    values = asyncio.run(many())
    assert calls == [10] and len(values) == 10


@pytest.mark.slow  # loads the sentence-transformers model (torch): tens of seconds on a busy machine
def test_batcher_serves_requests_that_arrive_while_a_batch_is_embedding(similarity_model_dir, monkeypatch):
    # Regression: a request made while the previous batch was in the model was never flushed.
    real = similarity.cosine_similarities
    calls = []

    def slow(answers, references, model_name, batch_size=similarity.BATCH_SIZE):
        import time

        calls.append(len(answers))
        time.sleep(0.2)
        return real(answers, references, model_name, batch_size)

    monkeypatch.setattr(similarity, "cosine_similarities", slow)
    batcher = similarity.EmbeddingBatcher(str(similarity_model_dir), window=0.01)

    async def staggered():
        first = asyncio.ensure_future(batcher.similarity("甲", "甲"))
        await asyncio.sleep(0.1)  # the first batch is now in the model
        second = await asyncio.wait_for(batcher.similarity("乙", "乙"), timeout=10)
        return await first, second

    first, second = asyncio.run(staggered())
    assert calls == [1, 1] and first == pytest.approx(1.0, abs=1e-5) and second == pytest.approx(1.0, abs=1e-5)


def test_unloadable_model_is_an_error_that_says_what_to_do(tmp_path):
    with pytest.raises(ConfigurationError) as info:
        similarity.load_model(str(tmp_path / "missing-model"))
    message = str(info.value)
    assert "Could not load the similarity model" in message
    assert "CLIMEDBENCH_SIMILARITY_MODEL=/path/to/model" in message and "train-simcse" in message


@pytest.mark.slow
def test_train_simcse_on_a_tiny_local_model(tiny_encoder_dir, tmp_path):
    from sentence_transformers import SentenceTransformer

    from clinconsensus_tasks.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TINY_CORPUS * 2) + "\n\n", encoding="utf-8")  # duplicates and blanks are dropped
    before = SentenceTransformer(str(tiny_encoder_dir), device="cpu").encode(TINY_CORPUS[:3])
    out = tmp_path / "simcse"
    assert main(["train-simcse", "--model", str(tiny_encoder_dir), "--corpus", str(corpus), "--output", str(out),
                 "--epochs", "2", "--batch-size", "8", "--learning-rate", "1e-3"]) == 0
    manifest = json.loads((out / "simcse_manifest.json").read_text(encoding="utf-8"))
    assert manifest["passages"] == len(TINY_CORPUS) and manifest["steps"] == 4
    assert manifest["first_loss"] is not None and manifest["last_loss"] is not None
    trained = SentenceTransformer(str(out), device="cpu")
    after = trained.encode(TINY_CORPUS[:3])
    assert abs(after - before).max() > 1e-4  # the weights moved
    # The saved model is what WTD scoring loads.
    cos = similarity.cosine_similarities([TINY_CORPUS[0]], [TINY_CORPUS[0]], str(out))
    assert cos[0] == pytest.approx(1.0, abs=1e-5)


def test_train_simcse_rejects_a_corpus_without_two_passages(tmp_path):
    from clinconsensus_tasks.climedbench.simcse import read_corpus

    one = tmp_path / "one.txt"
    one.write_text("同一句话\n同一句话\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="at least two distinct passages"):
        read_corpus(one)
