"""Block features: units that wrap or extend the decoder's blocks (n-gram heads, slow/fast streams), one file or
folder each, each registering itself with `@register_block_feature` (the hooks are described in `feature_registry`).

This package imports every module and subpackage of its folder, so a new feature file is all it takes; the skeleton
(`hf_icl.modeling`) reaches them only through the registry's hooks.
"""

import importlib
import pkgutil

from .feature_registry import (
    BLOCK_FEATURES,
    BlockFeature,
    ConfigField,
    FeatureOption,
    block_feature,
    feature_fields,
    feature_options,
    features_label,
    list_block_features,
    parse_feature_option,
    register_block_feature,
    unregister_block_feature,
    used_block_features,
)

# Every module of this folder is imported, so each feature registers itself: adding a feature edits no list.
for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_") and _module.name != "feature_registry":
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "BLOCK_FEATURES",
    "BlockFeature",
    "ConfigField",
    "FeatureOption",
    "block_feature",
    "feature_fields",
    "feature_options",
    "features_label",
    "list_block_features",
    "parse_feature_option",
    "register_block_feature",
    "unregister_block_feature",
    "used_block_features",
]
