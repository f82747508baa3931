"""The schema of a training run: every `RunArguments` field with its default, and the allowed range or values of each
numeric and enumerated one, whatever its source (command line, `--config`, family defaults and presets)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..block_features.feature_registry import features_label
from ..tasks import TaskRequest, family_of
from ..tasks.online import StepCurriculum
from ..utils.validation import (
    FRACTION,
    NON_NEGATIVE_NUMBER,
    OPTIONAL_POSITIVE_INT,
    POSITIVE_INT,
    POSITIVE_NUMBER,
    SEED,
    SEED_MAX,
    Limit,
)
from .schedules import LR_SCHEDULES

REPORT_TO = ("tensorboard", "trackio", "wandb", "none")
DECAY_GROUPS = ("matrices", "all")
MIXED_PRECISION = ("no", "bf16")
BATCHING = ("grouped", "shuffled")


@dataclass
class RunArguments:
    """Everything a training run needs; `train.py --help` documents each field.

    Defaults are AdamW (β = (0.9, 0.999), weight decay 0.1 on matrices), a linear warm-up from 1e-7, then a
    warm-up/stable/decay schedule that keeps the peak rate until the last 20 % of the steps (measured on RegBench:
    a cosine that decays early keeps small models on the pre-induction plateau; docs/results/recipe/). Paper 1's
    Appendix B recipe (β2 = 0.99, cosine, `|` labels masked) is the RegBench task preset `paper`. A task family may
    change defaults (`TaskFamily.run_defaults`) and offer named settings (`--task-preset`); the order of precedence is
    dataclass default < family default < task preset < `--config` file < command line.
    """

    architecture: str = "transformer"
    task: str = "regbench"
    n_train: int | None = None
    task_seed: int = 0
    preset: str = "small"
    overrides: dict = field(default_factory=dict)
    shared_overrides: dict = field(default_factory=dict)
    task_options: dict = field(default_factory=dict)
    task_preset: str | None = None
    curriculum: list = field(default_factory=list)
    aux_loss_weights: dict = field(default_factory=dict)
    lr: float = 1e-3
    min_lr: float = 2.5e-5
    warmup_start_lr: float = 1e-7
    warmup_ratio: float = 0.1
    warmup_steps: int | None = None
    weight_decay: float = 0.1
    weight_decay_on: str = "matrices"
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    lr_schedule: str = "wsd"
    decay_ratio: float = 0.2
    mixed_precision: str | None = None  # None: what `accelerate launch --mixed_precision` set, else "no"
    grad_clip: float = 1.0
    epochs: float = 3.0
    max_steps: int | None = None
    max_train_minutes: float | None = None
    batch_size: int = 32
    gradient_accumulation_steps: int = 1
    seed: int = 0
    data_seed: int | None = None  # the data order's seed (batches, online samples, augmentation); None: `seed`
    threads: int | None = None
    augment: bool = False
    batching: str = "grouped"
    output_dir: str | None = None
    checkpoint_every: int = 200
    keep_checkpoints: int = 2
    log_every: int = 10
    eval_batch_size: int = 64
    eval_every: int | None = None
    resume: bool = False
    overwrite: bool = False
    allow_changed_settings: bool = False
    report_to: str = "tensorboard"
    push_to_hub: str | None = None
    imports: list = field(default_factory=list)

    def resolved_output_dir(self) -> Path:
        if self.output_dir:
            return Path(self.output_dir)
        n_train = self.n_train or family_of(self.task).run_defaults.get("n_train")
        size = f"-n{n_train}" if n_train else ""
        arch = self.architecture + features_label(self.overrides)  # block features' labels, e.g. retnet+ngh1.123
        return Path("outputs") / f"{self.task}{size}-{arch}-{self.preset}-s{self.seed}"

    def to_dict(self) -> dict:
        return asdict(self)

    def data_order_seed(self) -> int:
        """The seed of the training data's order: `data_seed` where given, else `seed` (as transformers'
        `TrainingArguments.data_seed`), so that initialisation and data order can be varied apart."""
        return self.seed if self.data_seed is None else self.data_seed

    def curricula(self) -> list[StepCurriculum]:
        return [StepCurriculum.parse(text) for text in self.curriculum]

    def task_request(self) -> TaskRequest:
        """The run's task request: `--task-option` values (generator overrides and the family's task options), and
        the run options a family may read (`augment`)."""
        return TaskRequest(self.task, self.n_train, self.task_seed, dict(self.task_options), {"augment": self.augment})


RUN_LIMITS: dict[str, Limit] = {
    "n_train": OPTIONAL_POSITIVE_INT,
    "task_seed": SEED,
    "lr": POSITIVE_NUMBER,
    "min_lr": NON_NEGATIVE_NUMBER,
    "warmup_start_lr": NON_NEGATIVE_NUMBER,
    "warmup_ratio": FRACTION,
    "warmup_steps": Limit(int, low=0, optional=True),
    "weight_decay": NON_NEGATIVE_NUMBER,
    "adam_beta1": FRACTION,
    "adam_beta2": FRACTION,
    "decay_ratio": Limit(float, low=0, high=1),
    "grad_clip": NON_NEGATIVE_NUMBER,
    "epochs": POSITIVE_NUMBER,
    "max_steps": OPTIONAL_POSITIVE_INT,
    "max_train_minutes": Limit(float, low=0, low_open=True, optional=True),
    "batch_size": POSITIVE_INT,
    "gradient_accumulation_steps": POSITIVE_INT,
    "seed": SEED,
    "data_seed": Limit(int, low=0, high=SEED_MAX, optional=True),
    "threads": Limit(int, low=1, high=1024, optional=True),
    "checkpoint_every": POSITIVE_INT,
    "keep_checkpoints": POSITIVE_INT,
    "log_every": POSITIVE_INT,
    "eval_batch_size": POSITIVE_INT,
    "eval_every": OPTIONAL_POSITIVE_INT,
}
"""The allowed range of every numeric run argument, whatever its source (command line, `--config`, family defaults
and presets). A new numeric field needs an entry here (`tests/test_cli_fuzz.py` checks)."""
RUN_CHOICES: dict[str, tuple[str, ...]] = {
    "report_to": REPORT_TO,
    "lr_schedule": LR_SCHEDULES,
    "weight_decay_on": DECAY_GROUPS,
    "mixed_precision": MIXED_PRECISION,
    "batching": BATCHING,
}
"""The allowed values of every enumerated run argument besides `architecture`, `task` and the presets."""
