"""RegBench accuracy and TVD as an ``evaluate.Metric`` (P1 §4 eq. 8-9; DESIGN §2.3, §5.2).

Load it offline with ``evaluate.load(hf_icl.evaluation.REGBENCH_METRIC_PATH)``. The computation is
delegated to the plain functions in :mod:`hf_icl.evaluation.metrics`, micro-averaged over all positions
of all rows.
"""

import datasets
import evaluate
import numpy as np

from hf_icl.evaluation.metrics import accuracy, tvd

_DESCRIPTION = """Greedy accuracy (argmax has true probability > 0) and total variation distance between
model next-token distributions and the exact RegBench automaton distributions, averaged over all
positions of all instances."""

_KWARGS_DESCRIPTION = """
Args:
    predictions: per instance, a (T - 1, V_model) list of next-token probability rows.
    references: per instance, the (T - 1, V) truth from ``hf_icl.tasks.regbench.next_token_truth``;
        V_model >= V (the truth is zero-padded).
Returns:
    accuracy: float in [0, 1].
    tvd: float in [0, 1].
Example:
    >>> metric = evaluate.load(REGBENCH_METRIC_PATH)
    >>> metric.compute(predictions=[[[0.0, 1.0]]], references=[[[0.0, 1.0]]])
    {'accuracy': 1.0, 'tvd': 0.0}
"""

_CITATION = """@inproceedings{akyurek2024icll,
  title={In-Context Language Learning: Architectures and Algorithms},
  author={Aky{\\"u}rek, Ekin and Wang, Bailin and Kim, Yoon and Andreas, Jacob},
  booktitle={ICML}, year={2024}}"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class RegBench(evaluate.Metric):
    """RegBench next-token accuracy and TVD."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": datasets.Sequence(datasets.Sequence(datasets.Value("float64"))),
                    "references": datasets.Sequence(datasets.Sequence(datasets.Value("float64"))),
                }
            ),
        )

    def _compute(self, predictions, references):
        p = np.concatenate([np.asarray(x, dtype=np.float64).reshape(len(x), -1) for x in predictions])
        q = np.concatenate([np.asarray(x, dtype=np.float64).reshape(len(x), -1) for x in references])
        return {"accuracy": accuracy(p, q), "tvd": tvd(p, q)}
