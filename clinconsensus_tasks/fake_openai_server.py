"""The stand-in OpenAI-compatible server under its first name: an alias of
:mod:`clinconsensus_tasks.stand_in`, kept because tests, bench scripts and users' commands
(``python -m clinconsensus_tasks.fake_openai_server``) name it."""

from clinconsensus_tasks import stand_in
from clinconsensus_tasks.stand_in import *  # noqa: F403 (the alias re-exports the package's API)

__all__ = stand_in.__all__

if __name__ == "__main__":
    stand_in.main()
