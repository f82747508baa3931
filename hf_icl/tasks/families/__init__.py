"""The task families shipped with hf_icl, one file each; each module's `FAMILY` is registered by `hf_icl.tasks`."""
