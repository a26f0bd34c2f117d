"""Exceptions with messages a user can act on."""

from clinconsensus_tasks.scorers.redact import redact


class ClinConsensusError(Exception):
    """Base class of the plugin's own errors. Its message never carries a key we hold or a URL's
    user-info (``scorers.redact``): messages quote settings and server replies."""

    def __init__(self, message: object = "", *args: object):
        super().__init__(redact(str(message)), *args)


class DataSourceError(ClinConsensusError):
    """The data could not be read (hub unreachable, file missing, unknown format)."""


class DataValidationError(ClinConsensusError):
    """Records failed validation. The message names file, line, record id and field of each."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        shown = problems[:20]
        more = f"\n... and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
        super().__init__(f"{len(problems)} invalid record field(s):\n" + "\n".join(shown) + more)


class ConfigurationError(ClinConsensusError):
    """A setting the run needs is missing or wrong."""


class StorageError(ClinConsensusError):
    """A remote location (``s3://``, ``gs://`` ...) could not be read or written: the message names
    the URL and says why (no such bucket, access refused, the protocol's library not installed)."""
