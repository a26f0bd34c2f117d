"""Lay-facing versus professional-facing cases.

ClinConsensus marks who asks through the free-text ``user_role`` field. The benchmark's rule: a case
is professional-facing when the role names a health professional or trainee, recognised by any of a
fixed set of keywords; everything else is lay-facing.
"""

from __future__ import annotations

PROFESSIONAL_KEYWORDS: tuple[str, ...] = (
    "医生", "医师", "护士", "医学", "规培", "实习", "麻醉", "带教", "校医", "医务",
)

LAY = "lay"
PROFESSIONAL = "professional"


def audience(user_role: str) -> str:
    """Return ``"professional"`` if ``user_role`` contains a professional keyword, else ``"lay"``."""
    return PROFESSIONAL if any(word in user_role for word in PROFESSIONAL_KEYWORDS) else LAY
