"""Reading and comparing what runs recorded, below the gates and the report that judge and show runs:
two judges' agreement on the same answers (``agreement``), a physicians' review as its loop (``review_export``,
``review_intake``, ``review_score``, ``review_sheets``), the judging protocol a run recorded (``protocol``)
and its stored answers graded again (``regrade``). Above the benchmarks' log readers."""
