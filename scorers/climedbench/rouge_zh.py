"""Chinese ROUGE-1 for CliMedBench's keyword extraction (KE) task.

KE is scored by ROUGE-1 between the answer and the gold keywords. Standard ROUGE tokenisers
split on whitespace and drop non-Latin text, which leaves unsegmented Chinese with no tokens, so
ROUGE over Chinese is computed per character: every CJK ideograph is one token, every run of
Latin letters/digits (after NFKC and lower-casing) is one token ("PD-1" gives "pd", "1";
"ＣＯＶＩＤ－１９" gives "covid", "19"), and punctuation and whitespace are dropped. Other
scripts (Greek "β", kana, ...) are dropped too. Overlap counts tokens with multiplicity, as
``rouge_score`` does; :class:`ChineseTokenizer` lets ``rouge_score.rouge_scorer.RougeScorer``
reproduce these numbers.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Sequence

_TOKEN = re.compile(
    r"[\u4e00-\u9fff\u3400-\u4dbf\uf900-\ufaff\U00020000-\U0002fa1f]|[a-z0-9]+"
)


def tokenize(text: str) -> list[str]:
    """NFKC + lower-case, then one token per CJK ideograph and per [a-z0-9]+ run."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text or "").lower())


class ChineseTokenizer:
    """Adapter exposing :func:`tokenize` as the ``tokenizer`` of ``rouge_score``'s RougeScorer."""

    def tokenize(self, text: str) -> list[str]:
        """Same tokens as the module-level :func:`tokenize`."""
        return tokenize(text)


def rouge1_f1(prediction: str, reference: str) -> float:
    """ROUGE-1 F1 = 2 * overlap / (|prediction| + |reference|); 0.0 when either has no tokens."""
    pred = tokenize(prediction)
    ref = tokenize(reference)
    if not pred or not ref:
        return 0.0
    overlap = sum((Counter(pred) & Counter(ref)).values())
    return 2 * overlap / (len(pred) + len(ref))


def keyword_rouge1(answer: str, keywords: Sequence[str]) -> float:
    """ROUGE-1 F1 of an answer against its gold keywords joined by spaces."""
    return rouge1_f1(answer, " ".join(keywords))
