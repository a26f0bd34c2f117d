"""Keeping the keys we hold out of every message we raise, log or store.

Error paths carry text we do not control: a judge endpoint may repeat the API key in a 401 body,
and a base URL may carry a key in its user-info (``http://user:KEY@host/v1``). Such text ends up
in exception messages, in the failure reasons stored with each verdict (and so in the ``.eval``
log and lm-eval's sample files), and in the failure policy's messages. :func:`redact` is the one
function that cleans them, called where those messages are made. It removes:

* the user-info of any URL (``scheme://anything@host`` -> ``scheme://***@host``);
* the value of any setting named as a credential, as ``NAME=value`` or ``NAME: value`` (``api_key=``,
  ``access_key``, ``token``, ``secret``, ``password``, ``Authorization: Bearer ...``), so a key in
  lm-eval's ``--model_args`` never reaches a report whatever process reads it;
* every secret we hold: values given to :func:`hold_secret` (the judge settings register their
  API key and URL user-info), and the values of environment variables whose names end in
  ``_API_KEY``, ``_KEY``, ``_TOKEN``, ``_SECRET`` or ``_PASSWORD`` (where the judges' and Inspect
  model roles' keys live, e.g. ``CLINCONSENSUS_JUDGE_API_KEY``, ``OPENAI_API_KEY``), and the
  user-info of URLs held in any environment variable.

Values shorter than :data:`MIN_SECRET_CHARS` are not treated as secrets (``EMPTY``, the key a local
vLLM server accepts, would otherwise be masked in every word that contains it).

Framework-free: the judge client, the command line and both adapters import it.
"""

from __future__ import annotations

import os
import re
from typing import Awaitable, Callable, Iterable, Mapping, TypeVar
from urllib.parse import unquote, urlsplit

T = TypeVar("T")
MASK = "***"
MIN_SECRET_CHARS = 8
SECRET_ENV_SUFFIXES = ("_API_KEY", "_KEY", "_TOKEN", "_SECRET", "_PASSWORD")

_held: set[str] = set()
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)[^/\s@?#]+@")
_CREDENTIAL = re.compile(
    r"(?P<name>\b[\w-]*(?:api[_-]?key|access[_-]?key|secret|token|password|authorization)[\"']?\s*[=:]\s*[\"']?(?:bearer\s+)?)"
    r"(?P<value>[^\s,\"'&;}]+)", re.IGNORECASE)


def hold_secret(value: str | None) -> None:
    """Remember ``value`` (a key given on the command line, say) as a secret for :func:`redact`."""
    if value and len(value) >= MIN_SECRET_CHARS:
        _held.add(value)


def url_secrets(url: str | None) -> list[str]:
    """The user name and password in a URL's user-info, as written and decoded."""
    try:
        parts = urlsplit(url or "")
    except ValueError:
        return []
    found = [p for p in (parts.username, parts.password) if p]
    return found + [unquote(p) for p in found]


def hold_url_secrets(url: str | None) -> None:
    """Remember the user-info of ``url`` (e.g. a judge base URL) as secrets."""
    for value in url_secrets(url):
        hold_secret(value)


def held_secrets(env: Mapping[str, str] | None = None) -> set[str]:
    """Every secret :func:`redact` removes: those held, plus the keys and URL user-info found in ``env``
    (default: the process environment)."""
    env = os.environ if env is None else env
    found = set(_held)
    for name, value in env.items():
        candidates = [value] if name.upper().endswith(SECRET_ENV_SUFFIXES) else []
        if "@" in value:
            candidates += url_secrets(value)
        found.update(v for v in candidates if v and len(v) >= MIN_SECRET_CHARS)
    return found


def redact(text: str, secrets: Iterable[str] | None = None, by_form: bool = True) -> str:
    """``text`` with URL user-info and every held secret replaced by ``***``. With ``by_form`` off,
    only the secrets themselves are (not a URL's user-info or a value named as a credential, which
    are found by their form): for text still to be parsed, such as a judge's JSON reply, where
    masking ``"password: 123456\\"`` would also eat the escape before a quote and break the JSON."""
    if not text:
        return text
    if by_form:
        text = _USERINFO.sub(lambda m: m.group("scheme") + MASK + "@", text)
        text = _CREDENTIAL.sub(lambda m: m.group("name") + MASK, text)
    for secret in sorted(held_secrets() if secrets is None else secrets, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def redact_value(value: T, secrets: Iterable[str] | None = None, by_form: bool = True) -> T:
    """``value`` (JSON-like data: strings, dicts, lists, tuples) with :func:`redact` applied to every
    string in it, dict keys left as they are; other values unchanged. A new structure is returned."""
    return _redacted(value, set(held_secrets() if secrets is None else secrets), by_form)  # type: ignore[return-value]


def _redacted(value: object, secrets: set[str], by_form: bool = True) -> object:
    if isinstance(value, str):
        return redact(value, secrets, by_form)
    if isinstance(value, dict):
        return {k: _redacted(v, secrets, by_form) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_redacted(v, secrets, by_form) for v in value)
    return value


def redact_exception(exc: BaseException) -> BaseException:
    """Redact ``exc``'s message in place (its ``args``, and the ``message`` and ``body`` an SDK error
    carries), so that whoever formats or stores it later (a framework's log of a failed call) sees
    no key. Its type, status code and cause stay: retry decisions do not change."""
    secrets = held_secrets()
    exc.args = tuple(_redacted(a, secrets) for a in exc.args)
    for name in ("message", "body"):
        if isinstance(getattr(exc, name, None), (str, dict, list)):
            try:
                setattr(exc, name, _redacted(getattr(exc, name), secrets))
            except AttributeError:  # a read-only property
                pass
    return exc


def redacting_errors(call: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """``call`` (an async function) whose exceptions are redacted (:func:`redact_exception`) before
    they propagate."""
    if getattr(call, "redacts_errors", False):
        return call

    async def redacted_call(*args: object, **kwargs: object) -> T:
        try:
            return await call(*args, **kwargs)
        except Exception as exc:
            redact_exception(exc)
            raise

    redacted_call.redacts_errors = True  # type: ignore[attr-defined]
    return redacted_call
