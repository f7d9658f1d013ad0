"""What the model store holds, in all and per client, against the deployment's quotas.

A model's record names the client that trained it (``client``: the address the request came
from). Before a job is queued, :func:`check_quotas` adds up the store's folders (their
regular files, found without following links: O(files)) and refuses a job that would pass
``OKBOOST_MAX_STORE_BYTES`` (507), a client's ``OKBOOST_MAX_MODELS_PER_CLIENT`` (429) or
its ``OKBOOST_MAX_STORE_BYTES_PER_CLIENT`` (507), counting the model's estimated size.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from service.config import Settings
from service.errors import Busy, NotFound, ServiceError, StorageFull
from service.store.model_store import ModelStore


@dataclass
class Usage:
    """Models and bytes of the whole store and of one client."""

    total_bytes: int = 0
    client_models: int = 0
    client_bytes: int = 0


def folder_bytes(path: str) -> int:
    """Bytes of the regular files under ``path`` (links not followed)."""
    size = 0
    for top, _, names in os.walk(path, followlinks=False):
        for name in names:
            try:
                info = os.lstat(os.path.join(top, name))
            except OSError:
                continue  # removed meanwhile
            if stat.S_ISREG(info.st_mode):
                size += info.st_size
    return size


def usage_of(store: ModelStore, client: str | None) -> Usage:
    """What the store holds in all, and what ``client``'s models hold."""
    usage = Usage()
    for _, model_id in store.list_keys():
        size = folder_bytes(str(store.model_path(model_id)))
        usage.total_bytes += size
        if client is None:
            continue
        try:
            owner = store.read_record(model_id).get("client")
        except (NotFound, ServiceError):
            continue  # deleted meanwhile, or quarantined: not counted as the client's
        if owner == client:
            usage.client_models += 1
            usage.client_bytes += size
    return usage


def check_quotas(store: ModelStore, settings: Settings, client: str | None, need: float) -> None:
    """507 / 429 when a model of ``need`` bytes more would pass a quota of the store."""
    limits = (
        settings.max_store_bytes,
        settings.max_models_per_client,
        settings.max_store_bytes_per_client,
    )
    if all(limit is None for limit in limits):
        return
    usage = usage_of(store, client)
    if settings.max_store_bytes is not None:
        if usage.total_bytes + need > settings.max_store_bytes:
            raise StorageFull(
                f"the model store holds {usage.total_bytes} bytes and this model needs an "
                f"estimated {need:.0f}: over the store's limit of {settings.max_store_bytes} "
                "bytes (OKBOOST_MAX_STORE_BYTES); delete models you no longer need"
            )
    if client is None:
        return
    if settings.max_models_per_client is not None:
        if usage.client_models >= settings.max_models_per_client:
            raise Busy(
                f"this client ({client}) has {usage.client_models} models in the store, the "
                f"most one client may keep (OKBOOST_MAX_MODELS_PER_CLIENT); delete some "
                "(DELETE /models/{id}) before training more"
            )
    if settings.max_store_bytes_per_client is not None:
        if usage.client_bytes + need > settings.max_store_bytes_per_client:
            raise StorageFull(
                f"this client's ({client}) models hold {usage.client_bytes} bytes and this "
                f"one needs an estimated {need:.0f}: over the limit of "
                f"{settings.max_store_bytes_per_client} bytes per client "
                "(OKBOOST_MAX_STORE_BYTES_PER_CLIENT); delete models you no longer need"
            )
