"""Reading and comparing run records, below everything that judges runs: the facts a run recorded
(``facts``: read by the release gate, ``summarize --strict``, and the regression gate,
``compare-models``) and the agreement of two judges on the same answers (``agreement``: read by
``summarize``, the report and ``compare``). Above the benchmarks' log readers, below the tools."""
