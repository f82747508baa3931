"""An hf_icl plug-in from outside the package: a mixer, an architecture and a continuous-input task family.

`train.py --import hf_icl_toy_plugin --architecture toy_ema --task toy_lagged_sum --max-steps 3` trains it; the
mixer registered itself when `toy_modeling` was imported, and the two calls below add the rest.
"""

import numpy as np
import torch

from hf_icl import register_architecture, register_family
from hf_icl.tasks import EvalRequest, TaskData, TaskEntry, TaskFamily
from hf_icl.tasks.objectives import mean_squared_error
from hf_icl.tasks.online import OnlineSampler

from .toy_modeling import ToyEMAConfig, ToyEMAForCausalLM, ToyEMAForRegression, ToyEMAMixer, ToyEMAModel

TASK = "toy_lagged_sum"


class LaggedSumSampler(OnlineSampler):
    """x_t ~ N(0, I_2); the target is x_t[0] + x_{t−1}[1]: a model must carry the previous position forward."""

    def sample_batch(self, batch_size, rng):
        xs = rng.standard_normal((batch_size, self.params["n_points"], 2)).astype(np.float32)  # (B, T, 2)
        ys = xs[:, :, :1].copy()
        ys[:, 1:] += xs[:, :-1, 1:]  # (B, T, 1)
        return {"inputs": torch.from_numpy(xs), "targets": torch.from_numpy(ys)}


def prepare_data(request):
    sampler = LaggedSumSampler(n_points=int(request.options.get("n_points", 6)))
    return TaskData(train=sampler, collate=None, model_fields={"input_dim": 2, "output_dim": 1}, description={})


def evaluate(request: EvalRequest) -> dict:
    batch = request.data.train.sample_batch(32, np.random.default_rng(7))
    with torch.no_grad():
        predictions = request.model.eval()(inputs=batch["inputs"]).predictions
    mse = float(((predictions - batch["targets"]) ** 2).mean())
    return {"model": {"mse": mse}, "baselines": {"zero": {"mse": float((batch["targets"] ** 2).mean())}}}


register_architecture("toy_ema", ToyEMAConfig, ToyEMAModel, ToyEMAForCausalLM, ToyEMAForRegression)
register_family(
    TaskFamily(
        name="toy_plugin_regression",
        tasks={TASK: TaskEntry(builder=None, config_name=None, option_fields=("n_points",))},
        prepare_data=prepare_data,
        head="regression",
        objective=mean_squared_error,
        evaluate=evaluate,
        run_defaults={"lr": 1e-2, "warmup_steps": 0, "batch_size": 8},
        metric_note="Mean squared error of x_t[0] + x_{t-1}[1].",
    )
)

__all__ = ["TASK", "ToyEMAConfig", "ToyEMAMixer"]
