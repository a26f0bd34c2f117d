"""Every use of Inspect's private modules (``inspect_ai._*``, ``inspect_ai.*._*``), in one place.

Inspect's public API does not cover these needs; each import below says why it is needed, and the
patches of Inspect's objects at the end of the file say why each is made.
An Inspect upgrade that moves one of them breaks this file only (checked against inspect-ai
0.3.285). Nothing else in the project may import a private Inspect module.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

# ``inspect eval`` prints a PrerequisiteError as one line, without a traceback: the class our
# configuration errors also derive from when they stop a task (see ``inspect_task.shown_alone``).
from inspect_ai._util.error import PrerequisiteError

# The generate config of the running eval (the command line's --max-retries, --timeout,
# --attempt-timeout). A judge bound to a model role does not receive these from Inspect.
from inspect_ai.model._generate_config import active_generate_config

from inspect_ai.model import Model, ModelName

# The registry: to make a plugin's scorer loadable under the name a log records for it.
from inspect_ai._util.registry import RegistryInfo, registry_add, registry_has, registry_info

# The context Inspect's own log reader validates a sample with (``log_files.read_local_eval`` reads a
# finished .eval member by member and builds Inspect's ``EvalSample`` as Inspect's reader would).
from inspect_ai._util.constants import get_deserializing_context

__all__ = ["FrameworkChanged", "PrerequisiteError", "active_generate_config", "get_deserializing_context", "hf_thinking_off",
           "provider_name", "register_logged_scorer_name", "sdk_retries_off", "shown_alone", "use_http_client", "wrap_generate"]


def shown_alone(error: Exception, benchmark: str) -> Exception:
    """``error`` (same type, same ``str``, same attributes) made also Inspect's ``PrerequisiteError``,
    which ``inspect eval`` prints alone (its ``message``, starting with ``benchmark``) rather than at
    the end of a long traceback. Inspect has no public way to say "a prerequisite is missing": this
    is the one place that builds such an error (both benchmarks' task builders use it)."""
    kind = type(error)
    both = type(kind.__name__, (kind, PrerequisiteError), {"__module__": kind.__module__})
    alone = both.__new__(both)
    alone.__dict__.update(vars(error))
    alone.args = error.args
    text = str(error)
    alone.message = text if text.startswith(benchmark) else f"{benchmark}: {text}"
    return alone


def register_logged_scorer_name(factory: Callable[..., Any]) -> None:
    """Let ``inspect score LOG`` find a plugin scorer by the name the log records for it.

    Inspect records a scorer in ``log.eval.scorers`` under its *unqualified* name
    (``as_scorer_spec`` -> ``registry_unqualified_name``: ``rubric_scorer``), but looks names up
    with the package prefix a plugin's objects are registered under
    (``clinconsensus_tasks/rubric_scorer``); an unqualified name is only tried as
    ``inspect_ai/<name>``. So ``inspect score LOG`` cannot load any plugin's scorer, and
    ``--scorer clinconsensus_tasks/rubric_scorer`` loads it without the options the log
    recorded. Registering the same factory under the unqualified name too (as a scorer from a
    user's own task file is registered) closes that gap: ``inspect score`` imports every plugin's
    entry point at start-up (``platform_init`` -> ``ensure_entry_points``), then finds the scorer
    and calls it with the logged options. A scorer already registered under that name (a user's)
    is left alone.
    """
    info = registry_info(factory)
    name = info.name.rsplit("/", 1)[-1]
    if name == info.name or registry_has("scorer", name):
        return

    @functools.wraps(factory)
    def logged_name(*args: Any, **kwargs: Any) -> Any:
        return factory(*args, **kwargs)

    registry_add(logged_name, RegistryInfo(type="scorer", name=name, metadata=dict(info.metadata)))


# -- the patches ------------------------------------------------------------------------------------
#
# Inspect binds a judge from ``--model-role grader=...`` and gives the project its ``Model``; the
# provider object under it (``model.api``) is built by Inspect from the user's arguments. The judge
# needs four things of that object no public API gives a role-bound model, so they are done here,
# each on the provider classes they were read from (inspect-ai 0.3.285), each checked: a provider of
# those classes that lacks what a patch needs raises :class:`FrameworkChanged` naming the patch, never
# a silent fallback (``tests/test_framework_patches.py`` checks them against the installed Inspect).
# docs/architecture.md lists them with why.

PATCHED = "_clinconsensus_patched"


def openai_providers() -> tuple[type, ...]:
    """The provider classes of OpenAI-compatible judges (``openai/``, ``openai-api/``, ``vllm/`` and
    ``sglang/`` servers), which the patches below are made on; imported when first asked (the log
    readers import this module too, and need none of the OpenAI SDK)."""
    from inspect_ai.model._providers.openai import OpenAIAPI
    from inspect_ai.model._providers.openai_compatible import OpenAICompatibleAPI

    return OpenAIAPI, OpenAICompatibleAPI


class FrameworkChanged(RuntimeError):
    """Inspect no longer has what one of the project's patches of it needs (the message names it)."""


def _require(api: Any, names: tuple[str, ...], patch: str) -> None:
    missing = [n for n in names if not hasattr(api, n)]
    if missing:
        raise FrameworkChanged(f"inspect_compat.{patch}: {type(api).__module__}.{type(api).__qualname__} has no "
                               f"{', '.join(missing)} (read in inspect-ai 0.3.285); this patch must be rewritten for the "
                               "installed Inspect")


def provider_name(model: Model) -> str:
    """The provider a model was named with (``openai-api``, ``vllm``, ``hf`` ...): Inspect's public ``ModelName``."""
    return ModelName(model).api


def wrap_generate(model: Model, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """PATCH ``wrap_generate``: ``model.api.generate`` (one HTTP attempt; Inspect retries around it)
    replaced once by ``wrap(generate)``. Why: the judge's circuit breaker must see every HTTP attempt
    and stop sending when the judge is down, and a judge's reply and errors must be redacted before
    Inspect records them in the transcript and the response cache (``judge.inspect_calls``); Inspect's
    hooks only observe and cannot refuse a request or change a reply."""
    api = model.api
    _require(api, ("generate",), "wrap_generate")
    if not getattr(api.generate, PATCHED, False):
        wrapped = wrap(api.generate)
        setattr(wrapped, PATCHED, True)
        api.generate = wrapped


def sdk_retries_off(model: Model) -> None:
    """PATCH ``sdk_retries_off``: the OpenAI SDK client under an OpenAI-compatible judge retries no
    more (``client.max_retries = 0``, and in the provider's model arguments so a re-created client
    keeps it). Why: Inspect retries each judge call itself; the SDK's own two retries inside each of
    Inspect's attempts multiplied the requests a dead judge was sent and hid them from the breaker."""
    api = model.api
    if isinstance(api, openai_providers()):
        _require(api, ("client", "model_args"), "sdk_retries_off")
        api.client.max_retries = 0
        api.model_args.setdefault("max_retries", 0)


def use_http_client(model: Model, transport: Any) -> None:
    """PATCH ``use_http_client``: an OpenAI-compatible judge's HTTP transport replaced by ``transport``
    (the one the project's own judge client uses) and its client re-created around it with the
    provider's own ``initialize()``, once. Why: at hundreds of connections the SDK's default
    transport cost a judge call three times the CPU (docs/performance.md); Inspect takes an
    ``http_client`` only as an argument of a model it creates, not of a role the user bound."""
    api = model.api
    if transport is None or not isinstance(api, openai_providers()) or getattr(api, PATCHED, False):
        return
    _require(api, ("http_client", "initialize"), "use_http_client")
    setattr(api, PATCHED, True)
    api.http_client = transport
    api.initialize()


def hf_thinking_off(model: Model) -> None:
    """PATCH ``hf_thinking_off``: an in-process ``hf/`` judge's chat template gets
    ``enable_thinking=False`` unless the user passed ``-M enable_thinking=...``. Why: the released
    judge runs with thinking off; the provider reads the attribute at every call and takes it only
    as a model argument, which a bound role does not get from the project."""
    if provider_name(model) == "hf":
        _require(model.api, ("enable_thinking",), "hf_thinking_off")
        if model.api.enable_thinking is None:
            model.api.enable_thinking = False
