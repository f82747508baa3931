"""Generated documentation pages: the registry tables of README.md and docs/*.md, and docs/tasks.md, each written
and checked by its own command (`python -m hf_icl.pages.registry_tables`, `python -m hf_icl.pages.tasks_page`)."""
