"""`AutoModelForInContextRegression`: a transformers auto class for in-context regression (P5; DESIGN §2.1, §2.5).

It behaves like `AutoModelForCausalLM`: `from_config(config)` and `from_pretrained(folder)` pick the architecture's
model class from the config class, through its own `_model_mapping` (transformers' `_BaseAutoModelClass`). Every
architecture's regression class (`ICL<Arch>ForRegression`, whose `model(xs=..., ys=...)` is the in-context path) is
registered when `import hf_icl` runs. Checkpoints export their code under `AutoModel` in `auto_map`, so where hf_icl
is not installed `transformers.AutoModel.from_pretrained(folder, trust_remote_code=True)` loads the same model.
"""

from __future__ import annotations

from collections import OrderedDict

from transformers.models.auto.auto_factory import _BaseAutoModelClass, _LazyAutoMapping
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES


class AutoModelForInContextRegression(_BaseAutoModelClass):
    """Builds the in-context regression model of any hf_icl architecture.

    Example:
        ```python
        import hf_icl

        config = hf_icl.config_for("mamba", "tiny", input_dim=20, output_dim=1)
        model = hf_icl.AutoModelForInContextRegression.from_config(config)
        out = model(xs=xs, ys=ys)  # xs (B, N, 20), ys (B, N) -> out.predictions (B, N), out.loss
        ```
    """

    _model_mapping = _LazyAutoMapping(CONFIG_MAPPING_NAMES, OrderedDict())  # filled by `register` only
