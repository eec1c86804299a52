"""The ``redismem`` command line: the group and its shared options in
:mod:`.base`, the commands by group in the other modules, each imported here
so that it registers with :data:`main`."""

from . import admin, data, store, transfer, vectors
from .base import main

__all__ = ["admin", "data", "main", "store", "transfer", "vectors"]
