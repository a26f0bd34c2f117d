"""How each benchmark asks the model under test: one declared generation setting per benchmark.

Both frameworks must send a model the same request, or they do not measure the same thing. Left
alone they do not: lm-eval's API backends send ``temperature: 0`` and ``seed: 1234`` by default,
Inspect's providers send neither (the server's defaults apply, often sampling). So the setting is
declared once here and each framework is given it in its own terms:

* Inspect: the task's ``GenerateConfig`` (:meth:`GenerationSettings.inspect_config`); the user
  overrides it as usual with ``--temperature``, ``--max-tokens``, ``--seed``, ``--stop-seqs``
  (the command line's generate config wins over the task's).
* lm-eval: the YAML's ``generation_kwargs`` (:meth:`GenerationSettings.lmeval_generation_kwargs`,
  written by the config generators and checked by a test); overridden with ``--gen_kwargs``.
  The seed is not in the YAML: lm-eval's API backends send their ``seed`` model argument (default
  1234, the value declared here; ``--model_args ...,seed=N`` overrides it), and lm-eval's ``hf``
  backend would pass a ``seed`` key on to ``transformers``' ``generate``, which rejects it
  (``--seed`` seeds its torch generator instead).

The values: greedy (temperature 0, as both papers evaluate), seed 1234 (lm-eval's default, so
existing lm-eval runs keep their requests), no stop sequence (answers are free text and end where
the model ends them), and a token limit per benchmark: 8,192 for ClinConsensus's long clinical
answers (``ANSWER_MAX_TOKENS``; answers stopped by it are counted as truncated) and 1,024 for
CliMedBench, whose answers are a letter, an order or a short text (a chain-of-thought answer
included).

Both frameworks record what they sent: Inspect in the log's generate config and the task metadata
(``generation``), lm-eval in the results file's ``configs`` (``generation_kwargs``) and
``config.model_args``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from clinconsensus_tasks.scorers.clinconsensus.answers import ANSWER_MAX_TOKENS

DEFAULT_SEED = 1234  # lm-eval's API backends' default ``seed`` model argument


@dataclass(frozen=True)
class GenerationSettings:
    """The request fields that decide a model's answer, as every backend is asked to send them."""

    max_tokens: int
    temperature: float = 0.0
    seed: int = DEFAULT_SEED
    stop: tuple[str, ...] = ()

    def inspect_config(self, **overrides: Any) -> Any:
        """Inspect's ``GenerateConfig`` for the task (``overrides``: e.g. a task parameter's
        ``max_tokens``). No stop sequence is ``stop_seqs=None``, not ``[]``: Inspect's ``hf/``
        provider fails on an empty list. So an OpenAI-compatible request from Inspect carries no
        ``stop`` where lm-eval's carries ``stop: []``; both mean no stop sequence."""
        from inspect_ai.model import GenerateConfig

        fields = {"max_tokens": self.max_tokens, "temperature": self.temperature, "seed": self.seed, "stop_seqs": list(self.stop) or None}
        return GenerateConfig(**{**fields, **overrides})

    def lmeval_generation_kwargs(self) -> dict[str, Any]:
        """The YAML's ``generation_kwargs`` (the seed travels as a model argument, see the module)."""
        return {"until": list(self.stop), "max_gen_toks": self.max_tokens, "do_sample": self.temperature > 0,
                "temperature": self.temperature}

    def lmeval_yaml(self, indent: str = "  ") -> str:
        """``generation_kwargs:`` as YAML text, for the config generators."""
        import json

        lines = ["generation_kwargs:"] + [f"{indent}{k}: {json.dumps(v)}" for k, v in self.lmeval_generation_kwargs().items()]
        return "\n".join(lines) + "\n"

    def record(self) -> dict[str, Any]:
        """What logs record as the declared setting."""
        return {**asdict(self), "stop": list(self.stop)}


CLINCONSENSUS = GenerationSettings(max_tokens=ANSWER_MAX_TOKENS)
CLIMEDBENCH = GenerationSettings(max_tokens=1024)
