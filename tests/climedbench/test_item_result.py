"""The CliMedBench item result: produced by score_item, round-tripped through plain dicts, the
Inspect Score fields and the lm-eval per-document values (``climedbench.logs``), without losing or changing a field."""

from __future__ import annotations

import json

import pytest

from clinconsensus_tasks.climedbench.dataset import load_scenario
from clinconsensus_tasks.climedbench.logs import from_lmeval_sample, from_score_fields, lmeval_metrics, score_fields
from clinconsensus_tasks.scorers.climedbench.item_result import ItemResult, item_key, score_item
from clinconsensus_tasks.scorers.climedbench.scenarios import SCENARIOS, score_answer

BKT_ITEM = {"id": "BKT-x", "options": {"A": "a", "B": "b", "C": "c", "D": "d"}, "answer": "C"}


def test_score_item_is_the_scenario_rule_with_its_context():
    for code, answer in (("BKT", "答案：C"), ("BKT", "都不对"), ("SSO", "答案：DCAB")):
        item = BKT_ITEM if code == "BKT" else {"id": "SSO-x", "options": dict.fromkeys("ABCD", "s"), "answer": "DCBA"}
        result = score_item(code, item, answer, epoch=2)
        assert (result.value, result.parsed) == score_answer(SCENARIOS[code], item, answer)
        assert (result.item_id, result.scenario, result.answer, result.epoch, result.similarity_model) == (item["id"], code, answer, 2, None)
    assert score_item("KE", {"id": "k", "answer": ["高血压"]}, "高血压 糖尿病").value == pytest.approx(2 / 3)
    wtd = score_item("WTD", {"id": "w", "answer": "ref"}, "an answer", cosine=0.75, similarity_model="/m")
    assert (wtd.value, wtd.parsed, wtd.similarity_model, wtd.metric) == (0.75, True, "/m", "similarity")
    # An empty answer is a parse failure and needs no embedding; a real one cannot be scored without it.
    assert (score_item("WTD", {"id": "w", "answer": "ref"}, "  ").value, score_item("WTD", {"id": "w", "answer": "ref"}, None).parsed) == (0.0, False)
    with pytest.raises(ValueError, match="needs the cosine"):
        score_item("WTD", {"id": "w", "answer": "ref"}, "an answer")


def test_round_trip_through_a_plain_dict_and_json():
    results = [score_item("BKT", BKT_ITEM, "答案：C", epoch=3), score_item("BKT", BKT_ITEM, "不知道"),
               score_item("WTD", {"id": "w", "answer": "ref"}, "回答", cosine=0.123456789, similarity_model="simcse"),
               score_item("BKT", BKT_ITEM, "C", variant="cot", length_decile=7)]
    for result in results:
        data = json.loads(json.dumps(result.to_dict(), ensure_ascii=False))
        assert set(data) == {"item_id", "scenario", "value", "parsed", "answer", "epoch", "similarity_model", "variant", "length_decile"}
        assert ItemResult.from_dict(data) == result
    assert results[0].key == item_key("BKT", "BKT-x") == "BKT:BKT-x"
    assert results[0].row == ("BKT", 1.0, True) and results[1].row == ("BKT", 0.0, False)


def test_from_dict_names_the_bad_field():
    good = score_item("BKT", BKT_ITEM, "C").to_dict()
    with pytest.raises(ValueError, match=r"line 7: field\(s\) 'parsed' missing"):
        ItemResult.from_dict({k: v for k, v in good.items() if k != "parsed"}, "line 7")
    with pytest.raises(ValueError, match="field 'parsed': expected true or false"):
        ItemResult.from_dict({**good, "parsed": 1.0})
    with pytest.raises(ValueError, match="unknown field"):
        ItemResult.from_dict({**good, "verdict": "met"})
    with pytest.raises(ValueError, match="unknown CliMedBench scenario 'XX'"):
        ItemResult.from_dict({**good, "scenario": "XX"})
    with pytest.raises(ValueError, match="unknown CliMedBench variant 'noisy'"):
        ItemResult.from_dict({**good, "variant": "noisy"})
    with pytest.raises(ValueError, match="length_decile must be within 0 and 10, got 11"):
        ItemResult.from_dict({**good, "length_decile": 11})


def test_variant_and_decile_travel_through_both_framework_shapes():
    """The variant and the input-length decile reach the Inspect Score metadata and the lm-eval
    values (length_decile_<d>), and come back from each unchanged."""
    result = score_item("BKT", BKT_ITEM, "C", variant="cot", length_decile=4)
    fields = score_fields(result)
    assert fields["metadata"] == {"scenario": "BKT", "metric": "accuracy", "variant": "cot", "length_decile": 4}
    assert from_score_fields("BKT-x", "BKT", fields["value"], fields["answer"], fields["metadata"]) == result
    assert lmeval_metrics(result) == {"accuracy": 1.0, "score": 1.0, "parse_failure": 0.0, "length_decile_4": 1.0}
    # lm-eval logs the whole completion; the record gives back the final answer the rules read.
    record = {"doc": {"id": "BKT-x", "scenario": "BKT", "variant": "cot", "length_decile": 4},
              "filtered_resps": ["<思考>A 不对</思考>\nC"], **lmeval_metrics(result)}
    assert from_lmeval_sample(record, "f:1") == score_item("BKT", BKT_ITEM, "\nC", variant="cot", length_decile=4)


def test_inspect_score_fields_round_trip_and_shape():
    wtd = score_item("WTD", {"id": "w", "answer": "ref"}, "回答", cosine=0.5, similarity_model="simcse", epoch=2)
    fields = score_fields(wtd)
    # The shape the Inspect scorer has always logged (the report and the metric read it).
    assert fields == {"value": {"value": 0.5, "parsed": 1.0}, "answer": "回答", "explanation": "similarity=0.5000",
                      "metadata": {"scenario": "WTD", "metric": "similarity", "similarity_model": "simcse"}}
    assert from_score_fields("w", "WTD", fields["value"], fields["answer"], fields["metadata"], 2) == wtd
    failed = score_item("BKT", BKT_ITEM, "不知道")
    assert score_fields(failed)["explanation"] == "accuracy=0.0000 (unparseable answer)"
    assert "similarity_model" not in score_fields(failed)["metadata"]


def test_lmeval_values_round_trip_from_a_sample_record():
    item = load_scenario("SSO", announce=False).items[0]
    result = score_item("SSO", item, "答案：B C")
    metrics = lmeval_metrics(result)
    assert metrics == {"kendall_tau": result.value, "score": result.value, "parse_failure": 0.0}
    # A record as lm-eval's --log_samples writes it: doc, filtered response, the per-document values.
    record = {"doc_id": 0, "doc": {"id": item["id"], "scenario": "SSO", "item_json": json.dumps(item)},
              "filtered_resps": ["答案：B C"], "filter": "answer", **metrics}
    assert from_lmeval_sample(record, "f:1") == result
    # WTD's filter wraps the answer with its cosine and the embedding model.
    wtd = score_item("WTD", {"id": "w", "answer": "ref"}, "回答", cosine=0.25, similarity_model="simcse")
    wrapped = json.dumps({"answer": "回答", "cosine": 0.25, "similarity_model": "simcse"}, ensure_ascii=False)
    record = {"doc": {"id": "w", "scenario": "WTD"}, "filtered_resps": [wrapped], **lmeval_metrics(wtd)}
    assert from_lmeval_sample(record, "f:2") == wtd
    # No metric value: not scored (the reader reports it); not a CliMedBench record: an error naming where.
    assert from_lmeval_sample({"doc": {"id": "w", "scenario": "WTD"}}, "f:3") is None
    with pytest.raises(ValueError, match=r"^f:4: not a CliMedBench sample record"):
        from_lmeval_sample({"doc": {"case_id": "c"}}, "f:4")
    with pytest.raises(ValueError, match=r"^f:5: field 'parse_failure' missing"):
        from_lmeval_sample({"doc": {"id": "w", "scenario": "WTD"}, "similarity": 0.3}, "f:5")
