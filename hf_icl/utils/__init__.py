"""Shared helpers of hf_icl: atomic writes and folder locks, strict YAML, argument checks, CLI option help,
deprecation aliases of moved modules, and numba's CPU setup. Importing this package imports none of them."""
