"""Model cards and Hub upload of checkpoint folders (the network is touched only by `push_folder`)."""

from .cards import render_model_card
from .push import HubUnreachableError, check_hub_reachable, push_folder

__all__ = ["HubUnreachableError", "check_hub_reachable", "push_folder", "render_model_card"]
