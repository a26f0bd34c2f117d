"""Checks of the public ClinConsensus release (``clinconsensus-eval validate --release FILE``).

Plain ``validate`` (and every run) accepts any case file in the schema, so users can evaluate
their own cases. The public release promises more, and the official repository checks it before
publishing: 900 unique cases, the low difficulty tier only, exactly 30 rubric items per case
(27,000), the ten published fields, and nothing that looks like a reference answer or internal
bookkeeping. Strings that look like e-mail addresses, mainland phone numbers or ID-card numbers
are listed for a person to review. This module runs the same checks, reporting the same counts.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from clinconsensus_tasks.record_files import read_jsonl

RELEASE_CASES = 900
RELEASE_DIFFICULTY = "low"
RELEASE_RUBRICS_PER_CASE = 30
RELEASE_FIELDS = frozenset({
    "case_id", "difficulty", "task", "task_labels", "subject", "subject_labels", "user_role",
    "clinical_context", "user_request", "rubrics",
})
# A field with one of these names, or with one of these fragments in its name, must not be there.
FORBIDDEN_NAMES = frozenset({"reference_answer"})
FORBIDDEN_FRAGMENTS = ("source_file", "prompt_id", "row", "provenance", "physician", "doctor", "qc", "repair", "internal")
REVIEW_PATTERNS = {
    "email_like": re.compile(r"[\w.%+-]+@[\w.-]+", re.ASCII),
    "phone_like": re.compile(r"(?<!\d)1[3-9]\d{9}(?!\d)"),
    "id_card_like": re.compile(r"(?<!\d)\d{17}[\dXx](?!\d)"),
}
REVIEW_LIMIT = 100  # strings listed per kind


def _forbidden(key: str) -> bool:
    lowered = key.lower()
    return key in FORBIDDEN_NAMES or any(fragment in lowered for fragment in FORBIDDEN_FRAGMENTS)


def release_report(path: str | Path) -> dict[str, Any]:
    """Counts and findings for a release file (a JSON-lines file; bad lines raise with their line)."""
    path = Path(path)
    records = [record for _, record in read_jsonl(path)]
    rows = [r for r in records if isinstance(r, dict)]
    ids = [str(r.get("case_id", "")) for r in rows]
    rubric_counts = Counter(len(r["rubrics"]) if isinstance(r.get("rubrics"), list) else -1 for r in rows)
    review: dict[str, list[str]] = {}
    for kind, pattern in REVIEW_PATTERNS.items():
        found = sorted({m.group(0) for r in rows for m in pattern.finditer(json.dumps(r, ensure_ascii=False))})
        if found:
            review[kind] = found[:REVIEW_LIMIT]
    return {
        "file": path.name,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "records": len(records),
        "non_object_records": len(records) - len(rows),
        "unique_case_ids": len(set(ids)),
        "duplicate_case_ids": len(ids) - len(set(ids)),
        "difficulty_counts": dict(sorted(Counter(str(r.get("difficulty", "")) for r in rows).items())),
        "total_rubrics": sum(n for n in rubric_counts.elements() if n > 0),
        "rubric_length_counts": {str(k): v for k, v in sorted(rubric_counts.items())},
        "distinct_task_labels": len({str(x) for r in rows for x in r.get("task_labels") or []}),
        "distinct_subject_labels": len({str(x) for r in rows for x in r.get("subject_labels") or []}),
        "missing_required_fields": sorted(f for f in RELEASE_FIELDS if any(f not in r for r in rows)),
        "forbidden_field_keys": sorted({k for r in rows for k in r if _forbidden(k)}),
        "contact_like_matches_for_manual_review": review,
    }


def release_errors(report: dict[str, Any], strict_contact: bool = False) -> list[str]:
    """What keeps ``report``'s file from being the public release (empty when it passes)."""
    errors = []
    if report["records"] != RELEASE_CASES or report["unique_case_ids"] != RELEASE_CASES:
        errors.append(f"expected exactly {RELEASE_CASES} unique cases, found {report['records']} records "
                      f"with {report['unique_case_ids']} unique case ids")
    if report["duplicate_case_ids"]:
        errors.append(f"{report['duplicate_case_ids']} duplicate case id(s)")
    if report["non_object_records"]:
        errors.append(f"{report['non_object_records']} record(s) are not JSON objects")
    if report["difficulty_counts"] != {RELEASE_DIFFICULTY: RELEASE_CASES}:
        errors.append(f"expected only {RELEASE_CASES} '{RELEASE_DIFFICULTY}' cases, found difficulties {report['difficulty_counts']}")
    expected = RELEASE_CASES * RELEASE_RUBRICS_PER_CASE
    if report["rubric_length_counts"] != {str(RELEASE_RUBRICS_PER_CASE): RELEASE_CASES} or report["total_rubrics"] != expected:
        errors.append(f"every case must have exactly {RELEASE_RUBRICS_PER_CASE} rubric items ({expected} in all); "
                      f"rubric counts per case: {report['rubric_length_counts']}")
    if report["missing_required_fields"]:
        errors.append(f"fields missing from some records: {', '.join(report['missing_required_fields'])}")
    if report["forbidden_field_keys"]:
        errors.append(f"reference-answer or internal-looking fields present: {', '.join(report['forbidden_field_keys'])}")
    if strict_contact and report["contact_like_matches_for_manual_review"]:
        errors.append(f"contact-like strings present: {', '.join(report['contact_like_matches_for_manual_review'])}")
    return errors
