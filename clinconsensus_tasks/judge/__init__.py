"""The judge protocol (``protocol``) and its transports: Inspect model roles (``inspect_calls``,
``inspect_server``), the OpenAI-compatible client (``client``) and the batch API (``batch_api``);
the verdict cache, the judge input limit, the judge server's kind, the official template and the
provenance of a judgment. Below the benchmarks: nothing here imports them (docs/architecture.md)."""
