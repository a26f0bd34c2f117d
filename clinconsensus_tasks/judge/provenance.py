"""Which judge, prompt and data produced a ClinConsensus number: the provenance both frameworks record.

Inspect puts it in the task metadata and each score's metadata, lm-eval in every sample record
(``doc["data_provenance"]`` and the judge record's ``provenance``), and the report shows it for
runs of either framework. Never a key: the endpoint is reduced to scheme, host and port.

The judge prompt's name and sha256 come from the prompt selection (``judge.official_template``): it names the prompt a judge
mode sends and hashes its template (the messages built with placeholder fields), so a changed
prompt shows as a changed sha256 even where the prompt's name stayed the same.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit



def endpoint_host(base_url: str | None) -> str:
    """``https://user:key@api.example.com:8443/v1?k=x`` -> ``https://api.example.com:8443``."""
    if not base_url:
        return ""
    parts = urlsplit(base_url)
    if not parts.hostname:
        return ""
    return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")


def judge_display(model: str, endpoint: str) -> str:
    """The one name of a judge in both frameworks' records and reports: the model name as its
    server knows it, then the host it was reached at (``demo-judge @ http://127.0.0.1:8000``);
    the model name alone for an in-process judge (Inspect's ``hf/``)."""
    return f"{model} @ {endpoint}" if endpoint else model


def judge_provenance(model: str, base_url: str | None, mode: str, prompt: dict[str, str]) -> dict[str, str]:
    """Which judge graded (``model``: the name its server knows, without Inspect's provider
    prefix), where (host only, never a key), on what kind of server as ``GET /v1/models`` said
    (``judge_server``: vllm, sglang, openai, stand-in; empty when not asked), in which mode, with
    which prompt (``prompt``: ``judge.official_template.prompt_record``: name, sha256, source)."""
    from clinconsensus_tasks.judge.server_info import known_kind

    host = endpoint_host(base_url)
    return {"judge_model": model, "judge_endpoint": host, "judge": judge_display(model, host), "judge_mode": mode,
            "judge_server": known_kind(base_url, model), **prompt}


def jurors_provenance(judges: list[tuple[str, str | None]], mode: str, prompt: dict[str, str]) -> dict[str, Any]:
    """:func:`judge_provenance` of the grader role: its one judge ``(model, base_url)``, or for a
    jury the panel (``judge_model`` ``jury(a, b, c)``, no endpoint) with each juror's under ``jurors``."""
    if len(judges) == 1:
        return judge_provenance(*judges[0], mode, prompt)
    from clinconsensus_tasks.scorers.clinconsensus.jury import panel_name

    jurors = [judge_provenance(model, url, mode, prompt) for model, url in judges]
    name = panel_name([j["judge_model"] for j in jurors])
    return {"judge_model": name, "judge_endpoint": "", "judge": name, "judge_mode": mode, "judge_server": "",
            **prompt, "jurors": jurors}


DATA_FIELDS = ("data_source", "data_sha256", "data_revision", "data_revision_requested")


def data_provenance(loaded: Any) -> dict[str, str]:
    """Source, sha256 of the file read and, for the hub, the resolved revision of a ``LoadedCases``
    and the revision the run asked for (a commit pins the data; a branch does not)."""
    return {"data_source": loaded.source, "data_sha256": loaded.sha256 or "", "data_revision": getattr(loaded, "revision", None) or "",
            "data_revision_requested": getattr(loaded, "requested_revision", None) or ""}
