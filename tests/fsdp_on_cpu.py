"""Run a script under Accelerate's FSDP on CPU processes: `accelerate launch --use_fsdp ... fsdp_on_cpu.py SCRIPT ARGS`.

Accelerate 1.15 switches to FSDP only from a multi-accelerator state (MULTI_GPU, MULTI_XPU, ...): for CPU processes it
keeps MULTI_CPU, so `--use_fsdp` silently trains with DDP (FSDP2), or fails in the plugin's device lookup (FSDP1:
"There are currently no available devices found, must be one of 'XPU', 'CUDA', ..."). torch 2.13's `fully_shard` does
run on CPU over gloo, so this test helper flips that one switch in its own processes and then runs SCRIPT unchanged:
the training loop, Accelerate's FSDP2 preparation, sharded checkpoints and the final gather are the real ones.
"""

import runpy
import sys

import accelerate.state
from accelerate.utils import DistributedType

_init = accelerate.state.AcceleratorState.__init__


def _init_with_fsdp_on_cpu(self, *args, fsdp_plugin=None, **kwargs):
    _init(self, *args, fsdp_plugin=fsdp_plugin, **kwargs)
    if fsdp_plugin is not None and self.distributed_type == DistributedType.MULTI_CPU:
        # Both shared states: every later `AcceleratorState()` copies the `PartialState` fields over its own.
        accelerate.state.PartialState._shared_state["distributed_type"] = DistributedType.FSDP
        self.distributed_type = DistributedType.FSDP
        self.fsdp_plugin = fsdp_plugin
        if self._mixed_precision != "no":
            fsdp_plugin.set_mixed_precision(self._mixed_precision)


accelerate.state.AcceleratorState.__init__ = _init_with_fsdp_on_cpu

if __name__ == "__main__":
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
