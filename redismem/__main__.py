"""``python -m redismem``: the command line."""

from .cli import main

main(prog_name="redismem")
