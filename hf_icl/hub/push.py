"""Upload a checkpoint or dataset folder with `huggingface_hub.upload_folder`, failing fast without network."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from huggingface_hub import HfApi, constants


class HubUnreachableError(ConnectionError):
    """The Hub cannot be reached (offline mode or no network)."""


def check_hub_reachable(timeout: float = 5.0) -> None:
    """Raise `HubUnreachableError` at once when the Hub endpoint cannot be reached.

    Args:
        timeout: seconds to wait for a TCP connection to the endpoint.
    """
    endpoint = constants.ENDPOINT
    if constants.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes"):
        raise HubUnreachableError(f"HF_HUB_OFFLINE is set: cannot push to {endpoint}")
    parsed = urlparse(endpoint)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        socket.create_connection((parsed.hostname, port), timeout=timeout).close()
    except OSError as err:
        raise HubUnreachableError(f"cannot reach {endpoint} ({err}); no network, nothing was uploaded") from err


def push_folder(folder: str | Path, repo_id: str, repo_type: str = "model", private: bool = False) -> str:
    """Create `repo_id` if needed and upload `folder`; the local folder is never modified.

    Args:
        folder: local folder (a checkpoint from `save_pretrained`, or a dataset export).
        repo_id: `user/name` on the Hub.
        repo_type: `model` or `dataset`.
        private: create the repo as private.

    Returns:
        URL of the upload commit.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"folder {folder} does not exist")
    check_hub_reachable()
    api = HfApi()
    api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True)
    commit = api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type=repo_type)
    return str(commit)
