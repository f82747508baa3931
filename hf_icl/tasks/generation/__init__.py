"""The generation family: tasks scored by what a model generates (P4 copying and lookups, the phone book, P1
associative recall, zoology MQAR).

- :mod:`.generative`: the shared contract (:class:`GenerationTask`, :class:`Query`, span rows);
- :mod:`.copying` (with :mod:`.copying_sampling`), :mod:`.phonebook`, :mod:`.recall`: the builders, each with the
  registry entries of its tasks (spec and solver); :mod:`.tokenizers`;
- :mod:`.evaluation`: greedy generation through ``pipeline("text-generation")`` and the teacher-forced pass, with
  the lookup oracle and the n-gram copiers; :mod:`.export`: ``python -m hf_icl.export copying``;
- :mod:`.spec`: the :class:`~hf_icl.tasks.family.TaskFamily`, registered here.
"""

from ..family import register_family
from .generative import EOS, GenerationTask, Query
from .spec import FAMILY, TASKS

register_family(FAMILY)

GENERATION_TASKS: dict[str, GenerationTask] = {task: entry.spec for task, entry in TASKS.items()}
"""Task name -> how it is tokenized, trained on and scored (each task entry's ``spec``)."""

__all__ = ["EOS", "FAMILY", "GENERATION_TASKS", "TASKS", "GenerationTask", "Query"]
