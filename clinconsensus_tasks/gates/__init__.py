"""The gates: what decides whether a run's numbers may be published or compared, apart from what shows
them (``report``). ``facts`` reads what a run recorded, ``bar`` is what a gate accepts, ``release``
the release gate (``summarize --strict``), ``physicians`` its checks on a physicians' review,
``regression`` the regression gate (``compare-models``), ``texts`` how their figures are written."""
