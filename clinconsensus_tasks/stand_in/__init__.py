"""A deterministic OpenAI-compatible chat-completions server, for tests and benchmarks.

It stands in for both ends of a run on a machine with no model: the *candidate* (the model under
test, as served by an API or vLLM) and the *judge*. It speaks the real HTTP protocol, so the code
under test is the same client code that talks to a user's endpoint:

* candidate requests (anything that is not a judge prompt) get an answer that is a fixed function
  of the last user message, so every framework gets the same answer for the same case;
* judge requests, recognised by the project's judge system prompts, get verdicts that are a fixed
  function of (answer, criterion): :func:`oracle_verdict`. Per-criterion and batched prompts
  therefore receive the same verdicts, and tests can compute the expected metrics exactly;
* judge requests made with a template in the official form (one user message, placeholders
  ``{user_message}``, ``{response}``, ``{rubric_item}``) are recognised when the template was
  registered (``POST /config`` with ``{"judge_templates": [text, ...]}``, or ``--judge-template
  FILE``): the server cannot know the official text, so it matches the filled-in message against
  each registered template, takes the answer and the rubric item out of it, and replies with the
  same oracle verdict in the official fenced-JSON form. ``{"record_judge_messages": true}`` keeps
  every such message, returned by ``GET /judge_messages`` (to check them byte for byte);
* CliMedBench prompts (recognised by the project's clinician-role opening line) get an answer in
  one of the shapes real models use, chosen by :func:`climedbench_answer`: a letter after a marker,
  a bare or full-width letter, an ordering with arrows, a keyword list, a free-text comment, or
  now and then nothing usable; chain-of-thought prompts get the same answer after a reasoning
  block, or now and then a block that never closes. The prompts received are kept
  (:meth:`FakeOpenAIServer.climedbench_prompts`), so tests can compare what each framework sent;
* a candidate model name containing ``thinker`` answers like a reasoning model served without a
  reasoning parser: ``<think>...</think>`` then the same answer as any other candidate; one
  containing ``truncated`` is cut off while thinking (an unclosed ``<think>``, finish reason
  ``length``);
* a candidate model name containing ``empty`` answers with empty content, one containing
  ``degraded`` only on the questions :func:`degraded_case` picks (about a quarter), so two runs
  differ on a few known cases; a judge model name
  containing ``unauthorized`` gets HTTP 401 for every request (a wrong API key);
* judge model names containing ``flaky`` get injected faults, chosen by :func:`fault_for`
  (HTTP 429 or 500 on the first attempt, a malformed verdict on the first attempt, or a verdict
  that is malformed on every attempt);
* adversarial and broken behaviours, also chosen by model name: a candidate whose name contains
  ``inject`` appends a verdict of its own and a fake criterion section to its answer
  (:data:`INJECTION`); a judge whose name contains ``quoting`` quotes the answer before its own
  verdict, and with ``never`` judges every criterion not met; judge names containing ``down``
  get HTTP 500 for every judge call, ``toolong`` HTTP 400 "context length exceeded", ``drop`` a
  closed connection with no reply, and ``hang`` a reply only after :data:`HANG_SECONDS`;
* a judge model name containing ``unreadable`` writes prose and never a verdict, as a tiny model
  does (254 characters, finish reason ``stop``): one reply to a judge request, another to every
  re-ask of it;
* :meth:`FakeOpenAIServer.script` gives one model name a test's own reply function (reply text,
  an HTTP status, or a dropped connection for each :class:`ScriptedRequest`), for hostile or broken
  judges and models that no name rule covers;
* ``latency`` delays every judge response; ``answer_chars`` pads candidate answers to a realistic
  length; every reply carries a ``usage`` block (:func:`usage_for`: characters / 1.5 tokens, and
  cached tokens for a judge prompt whose prefix an earlier call completed, as providers count them,
  if it has at least ``cache_min_tokens``); ``GET /stats`` returns call, status, character and
  judge token counts (judge traffic counted apart) and how many repeated prefixes arrived after a
  call with them had completed (``prefix_repeats_after_return`` of ``prefix_repeats``);
  ``POST /reset`` clears them and the remembered prefixes; ``POST /config`` with
  ``{"latency": s, "answer_chars": n, "cache_min_tokens": n}`` changes the settings of a running server.

One module per concern: ``server`` (HTTP routes, settings, scripts, :class:`FakeOpenAIServer`),
``candidates`` (the candidate's answers), ``judges`` (verdicts, faults, broken judges), ``usage``
(usage blocks and the counters of ``GET /stats``).

Run standalone: ``python -m clinconsensus_tasks.stand_in --port 0 --latency 0.05`` (prints
``PORT <n>`` when ready). Bind it to
127.0.0.1 only.
"""

from clinconsensus_tasks.stand_in.candidates import (
    INJECTION, THINKING_PREFIX, candidate_answer, climedbench_answer, degraded_case,
)
from clinconsensus_tasks.stand_in.judges import (
    FAULT_429, FAULT_500, FAULT_MALFORMED_ALWAYS, FAULT_MALFORMED_ONCE, FAULT_NONE, HANG_SECONDS,
    alt_disagrees, fault_for, oracle_verdict, template_pattern,
)
from clinconsensus_tasks.stand_in.server import (
    MODEL_NAMES_HELP, FakeOpenAIServer, ScriptedRequest, add_command_arguments, add_server_arguments, build_parser, main, serve,
)
from clinconsensus_tasks.stand_in.usage import CHARS_PER_TOKEN, fake_tokens, prompt_tokens, usage_for

__all__ = [
    "CHARS_PER_TOKEN", "FAULT_429", "FAULT_500", "FAULT_MALFORMED_ALWAYS", "FAULT_MALFORMED_ONCE", "FAULT_NONE",
    "HANG_SECONDS", "INJECTION", "MODEL_NAMES_HELP", "THINKING_PREFIX", "FakeOpenAIServer", "ScriptedRequest",
    "alt_disagrees", "build_parser", "candidate_answer", "climedbench_answer", "degraded_case", "fake_tokens",
    "fault_for", "main", "oracle_verdict", "template_pattern", "usage_for", "add_command_arguments", "add_server_arguments", "serve",
    "prompt_tokens",
]
