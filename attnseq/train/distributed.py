"""Data-parallel training through PyTorch DDP: ``torchrun --nproc_per_node N -m attnseq.cli train ...``.

Each process trains on its own share of every epoch's batches (data.sampler.EpochBatches.shard:
every pair in one share, every share as many batches); DDP averages the gradients.
Process 0 evaluates, logs and writes checkpoints and shares its decisions with the others.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
import torch.distributed as dist
from torch import nn

from ..errors import UserError
from ..utils import whole_number

T = TypeVar("T")

# how the messages end: what a user who set a variable by hand does instead
LAUNCH = (
    "; for one process unset WORLD_SIZE, for several start them with torchrun --nproc_per_node N -m attnseq.cli "
    "train ..."
)


def whole(environ: Mapping[str, str], name: str, default: int) -> int:
    """The variable ``name`` of ``environ`` as a whole number >= 0 (``default`` where unset); a
    UserError naming it otherwise."""
    text = environ.get(name)
    if text is None:
        return default
    number = whole_number(text)
    if number is None:
        raise UserError(f"{name}={text!r}: not a whole number >= 0, as torchrun sets it{LAUNCH}")
    return number


@dataclass
class Distributed:
    """This process's place in a torchrun job (a single process: rank 0 of 1)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device | None = None  # this process's, once set up (nccl exchanges tensors there)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Distributed:
        """This process's place as torchrun's variables give it: WORLD_SIZE processes (one where it
        is unset or 1, whatever RANK and LOCAL_RANK say: other launchers set LOCAL_RANK -1 for one
        process); with several, this one's RANK and LOCAL_RANK, and MASTER_ADDR and MASTER_PORT
        where process 0 waits for the others. Values torchrun would not set (not a whole number,
        RANK not below WORLD_SIZE, one missing) are a UserError naming the variable."""
        world = whole(environ, "WORLD_SIZE", 1)
        if world == 1:
            return cls()
        if world < 1:
            raise UserError(f"WORLD_SIZE={environ['WORLD_SIZE']!r}: a job has at least 1 process{LAUNCH}")
        missing = [name for name in ("RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT") if not environ.get(name)]
        if missing:
            raise UserError(
                f"WORLD_SIZE={world}: a job of {world} processes needs {', '.join(missing)} as torchrun "
                f"sets them{LAUNCH}"
            )
        rank, local_rank, port = (whole(environ, name, 0) for name in ("RANK", "LOCAL_RANK", "MASTER_PORT"))
        if rank >= world:
            raise UserError(
                f"RANK={rank}: the processes of a job of WORLD_SIZE={world} are numbered 0 to {world - 1}{LAUNCH}"
            )
        if not 0 < port < 65536:
            raise UserError(f"MASTER_PORT={port}: not a port number (1 to 65535){LAUNCH}")
        return cls(rank, world, local_rank)

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def setup(self, device: torch.device) -> torch.device:
        """Join the process group (nccl on GPUs, gloo on CPUs); this process's device."""
        if not self.enabled:
            return device
        if device.type == "cuda":
            device = torch.device("cuda", self.local_rank)
            torch.cuda.set_device(device)
        if not dist.is_initialized():
            try:
                dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
            except (ValueError, RuntimeError) as err:  # the rendezvous at MASTER_ADDR:MASTER_PORT
                first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
                raise UserError(
                    f"MASTER_ADDR={os.environ.get('MASTER_ADDR')!r}, MASTER_PORT="
                    f"{os.environ.get('MASTER_PORT')!r}: the processes could not meet there ({first})"
                    f"{LAUNCH}"
                ) from None
        self.device = device
        return device

    def wrap(self, module: nn.Module, device: torch.device) -> nn.Module:
        """``module`` inside DistributedDataParallel when there are several processes."""
        if not self.enabled:
            return module
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(module, device_ids=[device.index] if device.type == "cuda" else None)

    def share(self, value: Any) -> Any:
        """Process 0's ``value``, on every process."""
        if not self.enabled:
            return value
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def decided_by_main(self, decide: Callable[[], T]) -> T:
        """``decide()`` as process 0 answers it, on every process (the others do not call it):
        one verdict for a choice that rests on a measurement, such as bf16 against fp32."""
        return self.share(decide() if self.is_main else None)

    def maximum(self, values: Sequence[float]) -> list[float]:
        """Each of ``values`` at its largest over the processes, on every process: one small
        all-reduce (the training loop's stop requests and clock, agreed after every update)."""
        if not self.enabled:
            return list(values)
        tensor = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return tensor.tolist()

    def close(self) -> None:
        """Leave the process group after every process has arrived."""
        if self.enabled and dist.is_initialized():
            dist.barrier()
            dist.destroy_process_group()


class LossModule(nn.Module):
    """The model's training loss as a ``forward``, so DDP sees (and synchronises) it."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, source, tgt_in, tgt_out, tgt_mask, label_smoothing: float = 0.0):
        return self.model.loss(source, tgt_in, tgt_out, tgt_mask, label_smoothing)
