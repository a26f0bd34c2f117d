"""What a machine lost mid-run costs a campaign in a bucket: how many answers are asked for again.

Issue 40 item 2 asks how many samples the same ``inspect eval-set`` command, run again, asks the
model for again, and why. This script kills an ``inspect eval-set`` of the bundled 12 cases with
SIGKILL (a machine preempted) once ``--answered`` answers are judged, then runs the same command
again, twice over: on *another* machine (its own Inspect response cache and data folder, as a
replacement machine has) and on the *same* machine (the killed one's folders). It prints the
samples the bucket's log held at the kill, and the model and judge calls of the new attempt.

Stand-ins: moto's S3 server on 127.0.0.1 (``tests/s3_server.py``) for the bucket; the project's
stand-in server for the model (a scripted ``cand-a`` that hangs after ``--answered`` answers, so
the process is killed mid-run) and the judge. What carries over to a real campaign: the counts
(Inspect writes a .eval log's samples every ``min(samples // 3, 10)`` samples; those finished since
die with the process unless the same machine's caches hold them), not the times.

Usage: python bench/campaign_resume.py [--answered 6]
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from campaign_machines import eval_set, wait_for  # noqa: E402  (the test's machines)

ANSWER = "建议完善血常规、肝肾功能及影像学检查，明确诊断后规范治疗，并密切随访。"


def one(where: str, answered: int, server, bucket: str, base: dict[str, str], root: Path) -> dict[str, int]:
    from inspect_ai.log import list_eval_logs, read_eval_log, read_eval_log_sample_summaries

    server.reset()
    log_dir = f"s3://{bucket}/{where}"
    hang, count = threading.Event(), itertools.count()

    def endpoint(req):
        if next(count) >= answered:
            hang.wait(300)
        return ANSWER

    server.script("cand-a", endpoint)
    first = root / where / "machine-1"
    run = eval_set(log_dir, first, "cand-a", "judge-model", "--display", "none", campaign="bench", base=base)
    try:
        wait_for(lambda: server.stats()["calls"].get("judge-model", 0) >= 1 + answered * 30, "the answers to be judged", 300)
        time.sleep(2)  # the last answers' scoring done; well inside Inspect's 60 s flush of a waiting sample
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait(60)
        hang.set()
    (killed,) = list_eval_logs(log_dir)
    held = len(read_eval_log_sample_summaries(killed.name))
    before = dict(server.stats()["calls"])
    server.script("cand-a", lambda req: ANSWER)
    again = eval_set(log_dir, first if where == "same-machine" else root / where / "machine-2", "cand-a", "judge-model",
                     "--display", "none", campaign="bench", base=base)
    if again.wait(600) != 0:
        raise RuntimeError(f"the second attempt failed: see {root / where}")
    calls = server.stats()["calls"]
    finished = [read_eval_log(i.name, header_only=True) for i in list_eval_logs(log_dir)]
    return {"answered_before_kill": answered, "samples_in_log_at_kill": held,
            "model_calls_again": calls.get("cand-a", 0) - before.get("cand-a", 0),
            "judge_calls_again": calls.get("judge-model", 0) - before.get("judge-model", 0),
            "logs_in_prefix": len(finished), "success": sum(h.status == "success" for h in finished)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answered", type=int, default=6, help="answers given (and judged) before the machine is killed")
    args = parser.parse_args()

    import s3_server
    import s3fs

    from clinconsensus_tasks.stand_in import FakeOpenAIServer

    moto, stop = s3_server.start()
    server = FakeOpenAIServer().start()
    base = dict(os.environ, AWS_ENDPOINT_URL=moto.endpoint, **s3_server.ENVIRONMENT, CAND_BASE_URL=server.base_url,
                CAND_API_KEY="k", JUDGE_BASE_URL=server.base_url, JUDGE_API_KEY="k", CLINCONSENSUS_JUDGE_PROMPT="project",
                HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    os.environ.update(AWS_ENDPOINT_URL=moto.endpoint, **s3_server.ENVIRONMENT)
    s3fs.S3FileSystem().mkdir("campaign")
    out: dict[str, dict[str, int]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for where in ("another-machine", "same-machine"):
                out[where] = one(where, args.answered, server, "campaign", base, Path(tmp))
                f = out[where]
                print(f"{where}: killed after {f['answered_before_kill']} of 12 answers were judged; the log held "
                      f"{f['samples_in_log_at_kill']}; the same command again asked the model {f['model_calls_again']} "
                      f"times and the judge {f['judge_calls_again']} ({f['logs_in_prefix']} logs in the prefix, "
                      f"{f['success']} success)")
    finally:
        server.stop()
        stop()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
