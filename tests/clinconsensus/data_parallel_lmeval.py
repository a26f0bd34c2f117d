"""One rank of an lm-eval data-parallel ClinConsensus run on CPU (launched by ``torch.distributed.run``).

Stands in for ``accelerate launch -m lm_eval --model hf ...`` on several GPUs: the model class takes
its rank, world size, gathers and barrier from torch.distributed, as lm-eval's HFLM does on GPUs
(its ``gather_object`` is ``torch.distributed.gather_object``; accelerate's ``gather`` and
``wait_for_everyone`` are ``all_gather`` and ``barrier`` here), over gloo instead of NCCL. The
answers come from lm-eval's own chat-completions backend talking to the test's stand-in server over
HTTP; lm-eval's evaluator shards the cases, runs the judge filter on each rank's share and gathers
samples and metrics to rank 0, which writes the results and samples files as ``lm_eval
--output_path DIR --log_samples`` does.

    python -m torch.distributed.run --nproc_per_node 2 --master_port PORT data_parallel_lmeval.py OUT_DIR BASE_URL
"""

from __future__ import annotations

import sys

import torch
import torch.distributed as dist
from lm_eval.api.registry import register_model
from lm_eval.models.openai_completions import LocalChatCompletion


@register_model("ranked-chat-completions")
class RankedChatCompletions(LocalChatCompletion):
    """lm-eval's chat-completions backend with torch.distributed's rank, world size and collectives."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._rank, self._world_size = dist.get_rank(), dist.get_world_size()

    def all_gather(self, tensor):
        parts = [torch.zeros_like(tensor) for _ in range(self._world_size)]
        dist.all_gather(parts, tensor)
        return torch.stack(parts) if tensor.dim() == 0 else torch.cat(parts)

    def gather_object(self, obj, dst=0):
        out = [None] * self._world_size if self._rank == dst else None
        dist.gather_object(obj, out, dst=dst)
        return out

    def barrier(self):
        dist.barrier()


def main(out_dir: str, base_url: str) -> None:
    from lm_eval.loggers import EvaluationTracker

    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    dist.init_process_group("gloo")
    model = RankedChatCompletions(model="cand-model", base_url=f"{base_url}/chat/completions", num_concurrent=4)
    tracker = EvaluationTracker(output_path=out_dir)
    results = simple_evaluate(model=model, apply_chat_template=True, log_samples=True, bootstrap_iters=1000,
                              evaluation_tracker=tracker)
    if dist.get_rank() == 0:  # lm-eval returns the results on rank 0 only, as under accelerate
        tracker.save_results_aggregated(results=results, samples=results["samples"])
        tracker.save_results_samples(task_name="clinconsensus", samples=results["samples"]["clinconsensus"])
    else:
        assert results is None
    dist.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:3])
