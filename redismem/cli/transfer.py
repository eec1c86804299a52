"""export and import: a namespace to and from a JSON Lines file."""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import click

from .base import (
    emit,
    json_option,
    main,
    namespace_option,
    run_sync,
    url_option,
)


@contextlib.contextmanager
def _progress(label: str, total: int, quiet: bool) -> Iterator[Callable[[int], None] | None]:
    """A progress bar on stderr when it is a terminal and output is not for scripts."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    with click.progressbar(length=total, label=label, file=sys.stderr) as bar:
        yield bar.update


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in counts.items() if n) or "nothing"


@main.command("export")
@url_option
@namespace_option
@click.option("--output", "-o", default="-", show_default=True,
              type=click.Path(dir_okay=False, allow_dash=True),
              help="File to write (- = standard output).")
@click.option("--raw", "keep_raw", is_flag=True,
              help="Carry entries the library did not write (raw commands) byte for byte "
                   "as raw records, which import puts back; without it the export stops "
                   "at the first one, naming it.")
@click.option("--allow-partial", is_flag=True,
              help="Exit 0 even when keys of no family the export carries are left out "
                   "(they are still named).")
@click.option("--all-namespaces", is_flag=True,
              help="Every namespace of the server, one section each (an operator's: it "
                   "SCANs); import restores each into its own namespace.")
@json_option
def export_cmd(url: str | None, namespace: str, output: str, keep_raw: bool,
               allow_partial: bool, all_namespaces: bool, as_json: bool) -> None:
    """Write a namespace as JSON Lines: settings, sessions, values, vectors,
    thread events, long-term memories and LangGraph checkpoints, with
    revisions and expiry (not the change feed, indexes or turns, which are
    no state to restore). An entry the library did not write stops it (exit
    1, naming the entry; -o FILE is then not written) unless --raw; keys of
    no family it carries make it exit 1 after writing the file, naming
    them, unless --allow-partial."""
    from .. import stats, transfer  # redis-py and the facade: imported when the command runs
    from ..memory import connect

    to_stdout = output == "-"
    target = None if to_stdout else Path(output)
    partial = None if target is None else target.with_name(f".{target.name}.partial")

    async def run() -> list[transfer.ExportSummary]:
        names = [namespace]
        if all_namespaces:
            async with await connect(url, namespace=namespace) as mem:
                names = await stats.namespaces(mem.client)
        summaries = []
        with contextlib.ExitStack() as stack:
            stream = (sys.stdout if partial is None
                      else stack.enter_context(partial.open("w", encoding="utf-8")))
            for ns in names:
                async with await connect(url, namespace=ns) as mem:
                    plan = await transfer.survey(mem)
                    with _progress(f"exporting {ns}", plan.total, as_json) as advance:
                        summaries.append(await transfer.export_namespace(
                            mem, stream.write, advance, plan, keep_raw=keep_raw,
                            all_namespaces=all_namespaces))
        if partial is not None and target is not None:
            partial.replace(target)  # a complete file or none at all
        return summaries

    try:
        summaries = run_sync(run())
    finally:
        if partial is not None:
            partial.unlink(missing_ok=True)
    left = False
    for summary in summaries:
        data = {"namespace": summary.namespace, "output": output, "records": summary.records,
                "exported": summary.exported, "left_out": summary.left_out}
        click.echo(json.dumps(data, sort_keys=True) if as_json
                   else f"exported {summary.records} records of {summary.namespace}: "
                        f"{_counts(summary.exported)}", err=to_stdout)
        if summary.left_out:
            left = True
            if not as_json:
                click.echo("LEFT OUT (keys of no family an export carries: raw writes, or a "
                           f"newer redismem's): {_counts(summary.left_out)} (key families "
                           f"rm:{{{summary.namespace}}}:<family>)", err=True)
    if all_namespaces and not summaries and not as_json:
        click.echo("no namespace on this server: the file is empty", err=True)
    if left and not allow_partial:
        raise SystemExit(1)


@main.command("import")
@url_option
@click.option("--namespace", "-n", default=None,
              help="Namespace to import into (default: the one the file was exported from).")
@click.option("--max-line-bytes", type=click.IntRange(1024, 2**31), default=None,
              help="Refuse a line longer than this, before reading it whole (default: twice "
                   "the target's max_value_bytes, or what a checkpoint record of 16 MiB "
                   "takes, plus 64 KiB).")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True, exists=True))
@json_option
def import_cmd(url: str | None, namespace: str | None, max_line_bytes: int | None, file: str,
               as_json: bool) -> None:
    """Restore an export FILE (- = standard input). Idempotent: what the target
    holds at the same or a later revision is kept; nothing is deleted. Every
    line is checked first: a malformed file changes nothing."""
    from .. import restore  # redis-py and the facade: imported when the command runs
    from ..store import RedisMemoryStore

    with contextlib.ExitStack() as stack:
        spool = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        if file == "-":
            path = spool / "import.jsonl"
            with path.open("w", encoding="utf-8") as out:
                shutil.copyfileobj(sys.stdin, out)
        else:
            path = Path(file)
        try:
            header = restore.read_header_record(path, max_line_bytes)
            sections = [(namespace or header["namespace"], path)]
            if header.get("all_namespaces"):
                if namespace:
                    raise click.UsageError("--namespace does not apply to a whole-server "
                                           "export: each section goes to its own namespace")
                sections = restore.split_sections(path, spool, max_line_bytes)
        except (OSError, ValueError) as exc:
            raise click.ClickException(f"{type(exc).__name__}: {exc}") from None

        async def run() -> list[restore.ImportSummary]:
            totals = []
            for target, part in sections:  # every line of every section checked first
                async with RedisMemoryStore(url, namespace=target) as store:
                    totals.append(await restore.check_file(store, part, max_line_bytes))
            done = []
            for (target, part), total in zip(sections, totals, strict=True):
                async with RedisMemoryStore(url, namespace=target) as store:
                    with _progress(f"importing into {target}", total, as_json) as advance:
                        done.append(await restore.import_file(store, part, advance,
                                                              max_line_bytes))
            return done

        summaries = run_sync(run())
    for summary in summaries:
        data = {"namespace": summary.namespace, "records": summary.records,
                "written": summary.written, "kept": summary.kept}
        emit(data, as_json, lambda d: f"imported {d['records']} records into {d['namespace']}: "
                                       f"wrote {_counts(d['written'])}; kept {_counts(d['kept'])}")
