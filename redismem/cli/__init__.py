"""The ``redismem`` command line: the group and its shared options in
:mod:`.base`, the commands by group in the other modules, each imported when
one of its commands is looked up (``COMMANDS`` in :mod:`.base` names them),
so that ``redismem --help`` imports none of them."""

from .base import main

__all__ = ["main"]
