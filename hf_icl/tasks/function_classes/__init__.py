"""The in-context regression suite (paper 5 §3.2, Table 2; DESIGN §5.5): one task family per function class.

- :mod:`.samplers` and :mod:`.classes`: the function classes (:data:`FUNCTION_CLASSES`, each a
  :class:`FunctionClass` declaring its sampler, settings, scoring and baselines) and :func:`sample`;
- :mod:`.function_class_data`: the fixed prompt sets as a ``datasets`` builder; :mod:`.evaluation`: error against
  the number of in-context examples with the baselines on the same prompts; :mod:`.export`:
  ``python -m hf_icl.export function_classes``;
- :mod:`.spec`: one :class:`~hf_icl.tasks.family.TaskFamily` per class, all registered here.

``hf_icl.tasks.function_classes.sample(task, batch_size, n_points, n_dims, seed, **options)`` is a stable public name.
"""

from ..family import register_family
from .classes import (
    FUNCTION_CLASSES,
    FunctionClass,
    FunctionClassSampler,
    model_inputs,
    normalizer,
    output_dim,
    sample,
)
from .function_class_data import (
    OOD_VARIANTS,
    OPTION_FIELDS,
    FunctionClassBuilder,
    FunctionClassConfig,
    prompts_from_rows,
)
from .samplers import (  # names of this module before the folder; `sample(task, ...)` draws prompts
    cot_io,
    decision_tree,
    gaussian_xs,
    linear,
    many_outliers,
    orthogonal_outliers,
    relu_2nn,
    sparse_parity,
    task_rng,
    unit_vectors,
    vector_mqar,
)
from .spec import FAMILIES

for _family in FAMILIES:
    register_family(_family)

FUNCTION_CLASS_FAMILIES = FAMILIES
"""The families of the suite (the name `hf_icl.tasks` exported before the family folders)."""

__all__ = [
    "FAMILIES",
    "FUNCTION_CLASSES",
    "FUNCTION_CLASS_FAMILIES",
    "OOD_VARIANTS",
    "OPTION_FIELDS",
    "FunctionClass",
    "FunctionClassBuilder",
    "FunctionClassConfig",
    "FunctionClassSampler",
    "cot_io",
    "decision_tree",
    "gaussian_xs",
    "linear",
    "many_outliers",
    "orthogonal_outliers",
    "relu_2nn",
    "sparse_parity",
    "unit_vectors",
    "vector_mqar",
    "model_inputs",
    "normalizer",
    "output_dim",
    "prompts_from_rows",
    "sample",
    "task_rng",
]
