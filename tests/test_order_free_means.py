"""Every mean metric is the same float whatever the order of its per-case values (issue 48, item 2).

lm-eval's data-parallel evaluation gathers the per-case values rank by rank, so its aggregation sees
them in another order than one process does; a plain float sum then changes in its last digit. The
metrics' mean (scorers.means) sums exactly; the lm-eval glue aggregates with it (case_mean).
"""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction

from clinconsensus_tasks.scorers.clinconsensus.cacs import headline_means, headline_stderrs
from clinconsensus_tasks.scorers.clinconsensus.cacs import CaseResult
from clinconsensus_tasks.scorers.means import mean, stderr_of_mean


def test_the_mean_is_the_correctly_rounded_sum_divided_by_the_count_in_every_order():
    rng = random.Random(7)
    values = [rng.randrange(31) / 30 for _ in range(90)]  # rubric-accuracy terms of 90 cases
    exact = float(Fraction(sum(Fraction(v) for v in values)))  # the true sum, rounded once
    plain = set()
    for _ in range(200):
        rng.shuffle(values)
        assert mean(values) == exact / 90
        plain.add(sum(values) / 90)
    assert len(plain) > 1  # the plain sum does depend on the order for these values
    assert mean([]) == 0.0


def test_the_rank_by_rank_order_of_two_ranks_gives_the_one_process_figures():
    rng = random.Random(3)
    cases = [CaseResult(rng.randrange(31), 30, case=f"C{i}") for i in range(45)]
    two_ranks = cases[0::2] + cases[1::2]  # lm-eval's shares (rank r takes every 2nd document from r), gathered
    assert headline_means(two_ranks) == headline_means(cases)
    assert headline_stderrs(two_ranks) == headline_stderrs(cases)
    values = [c.met / 30 for c in cases]
    assert stderr_of_mean(values[::-1]) == stderr_of_mean(values)


def test_the_failure_policy_counts_each_share_of_the_cases_once():
    # Data-parallel ranks hold disjoint shares: their tallies add up. Ranks that each judged every
    # case (a tensor-parallel launcher, where lm-eval gives every rank all documents) count once.
    from clinconsensus_tasks.clinconsensus.lmeval_task import run_tally, share_key
    from clinconsensus_tasks.scorers.clinconsensus.judge_failures import FailureTally

    docs = [{"case_id": f"C{i}"} for i in range(6)]
    even, odd, every = share_key(docs[0::2]), share_key(docs[1::2]), share_key(docs)
    assert len({even, odd, every}) == 3
    a, b = FailureTally(90, 5, Counter({"unreadable": 5})), FailureTally(90, 2, Counter({"unreadable": 2}))
    assert run_tally([(even, a), (odd, b)]) == FailureTally(180, 7, Counter({"unreadable": 7}))
    assert run_tally([(every, a), (every, a)]) == FailureTally(90, 5, Counter({"unreadable": 5}))
    assert run_tally([(even, a)]) == a
