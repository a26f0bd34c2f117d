"""End-to-end expectations worked out by hand, one per benchmark, for the bundled samples.

``frameworks.expected_metrics`` computes what a run must report with the code under test (the
core's ``summarize``); that proves the frameworks agree with the core, not that the core is right.
The numbers here are derived by hand from the stand-in server's rules and the metric definitions
(NOTES.md), and the end-to-end tests compare both frameworks' outputs with them.

ClinConsensus, stand-in candidate ``cand-model``, judge ``judge-model`` (per criterion). The
candidate's answer to a case is ``模拟回答（编号 NNNNN）：...`` with NNNNN = the first 12 hex
digits of sha256(question with blanks collapsed) mod 100000; the judge finds a criterion met when
the first 12 hex digits of sha256("verdict" \\x1f answer \\x1f criterion) mod 100 are below 55.
Applying that rule to the 12 cases of the sample (30 criteria each) gives the criteria met, s:

    case      s   s-9 (CACS@10 term x 21)   s-6 (CACS@7 term x 24)
    SYN-0001  14   5                          8
    SYN-0002  16   7                         10
    SYN-0003  12   3                          6
    SYN-0004  17   8                         11
    SYN-0005  16   7                         10
    SYN-0006  16   7                         10
    SYN-0007  21  12                         15
    SYN-0008  18   9                         12
    SYN-0009  14   5                          8
    SYN-0010  24  15                         18
    SYN-0011  15   6                          9
    SYN-0012  16   7                         10
    total    199  91                        127

  rubric accuracy = 199 / (12 x 30) = 199/360 = 0.55277...
  CACS@10 = mean over cases of max(0, s - 10 + 1) / (30 - 10 + 1) = 91 / (12 x 21) = 13/36 = 0.36111...
  CACS@7  = 127 / (12 x 24) = 127/288 = 0.44097...
  Pass@10 = 12/12 = 1 (every s >= 12).

CliMedBench, stand-in candidate ``cand-model``. SSO (Kendall's tau; for a partial answer every
gold pair scores +1 in the right order, -1 in the wrong one, 0 with an item missing, over all
pairs; an answer with no order scores 0 and is a parse failure):

    item     gold     reply                     order   concordant/discordant of pairs   tau
    SSO-001  BEADC    答案：B C                  BC      (B,C) +1; 1 of 10                +0.1
    SSO-002  BEDAFC   正确顺序为：D→C→F→A→E→B    DCFAEB  3 c, 12 d of 15                  -0.6
    SSO-003  CEDBA    答案：ABDCE                ABDCE   1 c, 9 d of 10                   -0.8
    SSO-004  BDCEA    答案：D E                  DE      (D,E) +1; 1 of 10                +0.1
    SSO-005  EDCAB    无法确定顺序。              -       parse failure                     0
    SSO-006  BADCE    答案：DEBCA                DEBCA   4 c, 6 d of 10                   -0.2
    SSO-007  CBAD     正确顺序为：D→C→B→A        DCBA    3 c, 3 d of 6                     0
    SSO-008  AFBDEC   无法确定顺序。              -       parse failure                     0
    SSO-009  CBDA     无法确定顺序。              -       parse failure                     0
    SSO-010  DEBCA    正确顺序为：E→A→C→D→B      EACDB   4 c, 6 d of 10                   -0.2

  SSO tau = (0.1 - 0.6 - 0.8 + 0.1 + 0 - 0.2 + 0 + 0 + 0 - 0.2) / 10 = -1.6 / 10 = -0.16;
  parse failures 3/10.

ID1 (accuracy): replies A, 答案为B, (no letter), C, 答案为D, (none), (none), 答案：D, A, (none)
against gold A, C, B, D, A, B, D, C, C, A: only ID1-001 is right, so accuracy = 1/10 = 0.1;
4 of 10 replies hold no letter (parse failure 0.4).
"""

from __future__ import annotations

CLINCONSENSUS_MET = {
    "SYN-0001": 14, "SYN-0002": 16, "SYN-0003": 12, "SYN-0004": 17, "SYN-0005": 16, "SYN-0006": 16,
    "SYN-0007": 21, "SYN-0008": 18, "SYN-0009": 14, "SYN-0010": 24, "SYN-0011": 15, "SYN-0012": 16,
}
CLINCONSENSUS = {"rubric_accuracy": 199 / 360, "cacs@10": 13 / 36, "cacs@7": 127 / 288, "pass@10": 1.0}

SSO_TAUS = {"SSO-001": 0.1, "SSO-002": -0.6, "SSO-003": -0.8, "SSO-004": 0.1, "SSO-005": 0.0,
            "SSO-006": -0.2, "SSO-007": 0.0, "SSO-008": 0.0, "SSO-009": 0.0, "SSO-010": -0.2}
CLIMEDBENCH = {"SSO/kendall_tau": -0.16, "SSO/parse_failure": 0.3, "ID1/accuracy": 0.1, "ID1/parse_failure": 0.4}

# The frameworks add per-case terms in case order and divide (as lm-eval's mean does): the float
# differs from the exact fraction in the last bit at most.
TOLERANCE = 1e-15
