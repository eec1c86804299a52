"""The ``redismem`` command line: the group and its shared options in
:mod:`.base`, the commands by group in the other modules, each imported here
so that it registers with :data:`main`."""

from . import admin, data, namespace, store, transfer, turns, users, vectors
from .base import main

__all__ = ["admin", "data", "main", "namespace", "store", "transfer", "turns", "users",
           "vectors"]
