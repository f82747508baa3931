"""`ValidatedBuilder`: a `datasets.GeneratorBasedBuilder` that rejects a bad config before touching the cache."""

from __future__ import annotations

import datasets


class ValidatedBuilder(datasets.GeneratorBasedBuilder):
    """Base of the hf_icl builders: `validate_config(config)` runs as soon as the config is resolved.

    Subclasses set `validate_config` to a function that raises `ValueError` naming the field, the value and the
    allowed values, so bad overrides fail before any generation or cache directory exists.
    """

    validate_config = staticmethod(lambda config: None)

    def _create_builder_config(self, *args, **kwargs):
        config, config_id = super()._create_builder_config(*args, **kwargs)
        self.validate_config(config)
        return config, config_id
