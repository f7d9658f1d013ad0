"""What the model store holds, in all and per client, against the deployment's quotas.

A model's record names the client that trained or imported it (``client``: its key,
service.deps.client_key). Before a job is queued, :func:`check_quotas` adds up the store's
folders (their regular files, found without following links: O(files)) and refuses a job
that would pass ``OKBOOST_MAX_STORE_BYTES`` (507), a client's
``OKBOOST_MAX_MODELS_PER_CLIENT`` (429) or its ``OKBOOST_MAX_STORE_BYTES_PER_CLIENT`` (507),
counting the model's estimated size. An import (service.store.archives) is refused with the
same answers: the models count before its archive is read, its bytes as the sizes its
members declare arrive, before each member is written.
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


@dataclass
class Quotas:
    """The store's quotas as they stand for one client (``usage`` read once): what one more
    model may hold."""

    settings: Settings
    client: str | None
    usage: Usage

    def check(self, need: float, estimated: bool = True) -> None:
        """507 / 429 when a model of ``need`` bytes more would pass a quota (``estimated``:
        ``need`` is the model's estimated size, else the bytes its files hold)."""
        settings, usage, client = self.settings, self.usage, self.client
        needs = f"needs an estimated {need:.0f}" if estimated else f"holds {need:.0f} bytes"
        if settings.max_store_bytes is not None:
            if usage.total_bytes + need > settings.max_store_bytes:
                raise StorageFull(
                    f"the model store holds {usage.total_bytes} bytes and this model {needs}: "
                    f"over the store's limit of {settings.max_store_bytes} bytes "
                    "(OKBOOST_MAX_STORE_BYTES); delete models you no longer need"
                )
        if client is None:
            return
        if settings.max_models_per_client is not None:
            if usage.client_models >= settings.max_models_per_client:
                raise Busy(
                    f"this client ({client}) has {usage.client_models} models in the store, "
                    "the most one client may keep (OKBOOST_MAX_MODELS_PER_CLIENT); delete some "
                    "(DELETE /models/{id}) before adding more"
                )
        if settings.max_store_bytes_per_client is not None:
            if usage.client_bytes + need > settings.max_store_bytes_per_client:
                raise StorageFull(
                    f"this client's ({client}) models hold {usage.client_bytes} bytes and this "
                    f"one {needs}: over the limit of {settings.max_store_bytes_per_client} "
                    "bytes per client (OKBOOST_MAX_STORE_BYTES_PER_CLIENT); delete models you "
                    "no longer need"
                )


def quotas_of(store: ModelStore, settings: Settings, client: str | None) -> Quotas:
    """The store's quotas for ``client``, with what the store holds read now (not read when
    the deployment sets no quota)."""
    limits = (
        settings.max_store_bytes,
        settings.max_models_per_client,
        settings.max_store_bytes_per_client,
    )
    unlimited = all(limit is None for limit in limits)
    return Quotas(settings, client, Usage() if unlimited else usage_of(store, client))


def check_quotas(store: ModelStore, settings: Settings, client: str | None, need: float) -> None:
    """507 / 429 when a model of an estimated ``need`` bytes more would pass a quota."""
    quotas_of(store, settings, client).check(need)
