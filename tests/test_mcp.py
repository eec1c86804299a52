"""``redismem mcp``: the tools through the MCP SDK's own client, in-process
on ``memory://`` for the logic, and as MCP hosts run it (``redismem mcp``
started as a subprocess, ``ClientSession`` over ``stdio_client``) on the
real server: two agents on one namespace, a conflict, a reader's agent
refused, every bad input answered as an error while the server goes on."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from redismem.mcp_server import build

TOOLS = {"memory_get", "memory_set", "memory_merge", "memory_delete", "memory_list",
         "memory_changes", "thread_append", "thread_recent", "remember", "recall", "forget"}


def result(reply: Any) -> Any:
    assert not reply.is_error, reply.content
    return reply.structured_content


def refusal(reply: Any) -> str:
    assert reply.is_error, reply.structured_content
    text: str = reply.content[0].text
    assert "\n" not in text.strip() or "validation error" in text  # one line, or pydantic's
    return text


async def test_the_tools_and_their_schemas() -> None:
    async with Client(build("memory://", "mcp-" + uuid.uuid4().hex[:6])) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and len(tool.description) > 40, tool.name
    schema = tools["memory_set"].input_schema
    assert set(schema["required"]) == {"scope", "key", "value"}
    assert schema["properties"]["key"]["maxLength"] == 512
    assert schema["properties"]["key"]["minLength"] == 1
    assert "session:ID" in schema["properties"]["scope"]["description"]
    limit = tools["memory_list"].input_schema["properties"]["limit"]
    assert (limit["minimum"], limit["maximum"]) == (1, 1000)
    assert tools["memory_changes"].input_schema["properties"]["after"]["minimum"] == 0


async def test_each_tool_round_trips_on_memory() -> None:
    async with Client(build("memory://", "mcp-" + uuid.uuid4().hex[:6])) as client:
        s = {"scope": "session:s1"}
        assert result(await client.call_tool("memory_get", {**s, "key": "notes"})) == {
            "value": None, "revision": 0, "found": False}
        assert result(await client.call_tool("memory_set", {
            **s, "key": "notes", "value": {"todo": ["pack"]}})) == {"revision": 1}
        assert result(await client.call_tool("memory_merge", {
            **s, "key": "notes", "patch": {"done": True}})) == {"revision": 2}
        assert result(await client.call_tool("memory_get", {**s, "key": "notes"})) == {
            "value": {"todo": ["pack"], "done": True}, "revision": 2, "found": True}
        await client.call_tool("memory_set", {**s, "key": "other", "value": 1,
                                              "expected_revision": 0})
        listed = result(await client.call_tool("memory_list", {**s, "limit": 1}))
        assert listed["keys"] == [{"key": "notes", "revision": 2}] and listed["next_cursor"]
        listed = result(await client.call_tool("memory_list", {
            **s, "cursor": listed["next_cursor"]}))
        assert listed == {"keys": [{"key": "other", "revision": 1}], "next_cursor": None}
        changes = result(await client.call_tool("memory_changes", {"after": 0}))
        assert [(e["key"], e["action"], e["revision"]) for e in changes["events"]] == [
            ("notes", "set", 1), ("notes", "merge", 2), ("other", "set", 1)]
        assert changes["next_cursor"] == 3
        assert result(await client.call_tool("memory_delete", {
            **s, "key": "other", "expected_revision": 1})) == {"deleted": True}
        assert result(await client.call_tool("memory_delete", {**s, "key": "other"})) == {
            "deleted": False}
        assert result(await client.call_tool("memory_get", {"scope": "global", "key": "notes"}
                                             ))["found"] is False  # scopes are apart


async def test_threads_and_long_term_memories_on_memory() -> None:
    async with Client(build("memory://", "mcp-" + uuid.uuid4().hex[:6])) as client:
        ids = result(await client.call_tool("thread_append", {"thread_id": "t1", "events": [
            {"type": "message", "role": "user", "text": "book Lisbon"},
            {"tool": "search"}]}))["ids"]
        assert len(set(ids)) == 2
        events = result(await client.call_tool("thread_recent", {"thread_id": "t1"}))["events"]
        assert [(e["id"], e["type"], e["payload"]) for e in events] == [
            (ids[0], "message", {"type": "message", "role": "user", "text": "book Lisbon"}),
            (ids[1], "message", {"tool": "search"})]
        assert len(result(await client.call_tool("thread_recent", {
            "thread_id": "t1", "limit": 1}))["events"]) == 1
        kept = result(await client.call_tool("remember", {
            "text": "Ana is allergic to peanuts", "user_id": "ana", "topics": ["diet"]}))
        await client.call_tool("remember", {"text": "Ana flies to Lisbon", "user_id": "ana"})
        await client.call_tool("remember", {"text": "peanuts are cheap", "user_id": "bob"})
        found = result(await client.call_tool("recall", {"query": "peanuts",
                                                         "user_id": "ana"}))["memories"]
        assert [(m["memory_id"], m["topics"]) for m in found] == [(kept["memory_id"], ["diet"])]
        assert found[0]["score"] > 0
        assert result(await client.call_tool("remember", {  # replaced, same id
            "text": "Ana is allergic to cashews", "user_id": "ana",
            "memory_id": kept["memory_id"]})) == kept
        assert result(await client.call_tool("recall", {"query": "peanuts",
                                                        "user_id": "ana"}))["memories"] == []
        await client.call_tool("forget", {"memory_id": kept["memory_id"], "user_id": "ana"})
        assert result(await client.call_tool("recall", {"query": "cashews",
                                                        "user_id": "ana"}))["memories"] == []
        for tool, arguments, expected in [
                ("thread_append", {"thread_id": "bad:id", "events": [{}]}, "invalid_id"),
                ("thread_append", {"thread_id": "t1", "events": []}, "events"),
                ("thread_append", {"thread_id": "t1", "events": [1]}, "events"),
                ("thread_recent", {"thread_id": "t1", "limit": 0}, "limit"),
                ("remember", {"text": ""}, "text"),
                ("recall", {"query": "  "}, "the query is empty"),
                ("recall", {"query": ""}, "query"),
                ("forget", {"memory_id": ""}, "memory_id")]:
            assert expected in refusal(await client.call_tool(tool, arguments)), tool
        assert len(result(await client.call_tool("thread_recent", {
            "thread_id": "t1"}))["events"]) == 2


async def test_bad_input_is_an_error_result_and_the_server_goes_on() -> None:
    async with Client(build("memory://", "mcp-" + uuid.uuid4().hex[:6])) as client:
        s = {"scope": "workflow:w"}
        await client.call_tool("memory_set", {**s, "key": "k", "value": 1})
        stale = refusal(await client.call_tool("memory_set", {
            **s, "key": "k", "value": 2, "expected_revision": 5}))
        assert "conflict" in stale and "revision 1" in stale and "not 5" in stale
        cases = [
            ("memory_get", {"scope": "team:x", "key": "k"}, "unknown scope 'team:x'"),
            ("memory_get", {"scope": "session", "key": "k"}, "unknown scope"),
            ("memory_get", {**s, "key": ""}, "key"),
            ("memory_get", {**s, "key": "x" * 513}, "key"),
            ("memory_get", {**s, "key": "a\x01b"}, "control characters"),
            ("memory_set", {**s, "key": "big", "value": "x" * 200_000}, "value_too_large"),
            ("memory_set", {**s, "key": "k", "value": 1, "expected_revision": -1},
             "expected_revision"),
            ("memory_merge", {**s, "key": "k", "patch": [1]}, "patch"),
            ("memory_list", {**s, "limit": -1}, "limit"),
            ("memory_list", {**s, "cursor": "zz\x00"}, "cursor"),
            ("memory_changes", {"after": -1}, "after"),
            ("memory_changes", {"limit": 0}, "limit"),
        ]
        for tool, arguments, expected in cases:
            assert expected in refusal(await client.call_tool(tool, arguments)), (tool, arguments)
        assert result(await client.call_tool("memory_get", {**s, "key": "k"}))["value"] == 1


@asynccontextmanager
async def agent(url: str, namespace: str, message_handler: Any = None,
                embedder: str = "none") -> AsyncIterator[ClientSession]:
    """``redismem mcp`` started as an MCP host starts it."""
    exe = shutil.which("redismem")
    assert exe is not None
    params = StdioServerParameters(command=exe, args=["mcp", "--namespace", namespace,
                                                      "--embedder", embedder],
                                   env={"REDISMEM_URL": url, "PATH": os.environ["PATH"]})
    async with stdio_client(params) as (read, write), \
            ClientSession(read, write, message_handler=message_handler) as session:
        await session.initialize()
        yield session


async def test_two_agents_share_one_namespace_over_stdio(redis_url: str) -> None:
    ns = "mcp-" + uuid.uuid4().hex[:6]
    async with agent(redis_url, ns) as first, agent(redis_url, ns) as second:
        assert {t.name for t in (await first.list_tools()).tools} == TOOLS
        written = result(await first.call_tool("memory_set", {
            "scope": "workflow:trip", "key": "plan", "value": {"city": "Lisbon"}}))
        got = result(await second.call_tool("memory_get", {"scope": "workflow:trip",
                                                           "key": "plan"}))
        assert got == {"value": {"city": "Lisbon"}, "revision": written["revision"],
                       "found": True}
        stale = refusal(await second.call_tool("memory_set", {
            "scope": "workflow:trip", "key": "plan", "value": {}, "expected_revision": 0}))
        assert "conflict" in stale and "revision 1" in stale
        assert "unknown scope" in refusal(await first.call_tool("memory_get", {
            "scope": "nowhere", "key": "plan"}))
        events = result(await second.call_tool("memory_changes", {}))["events"]
        assert [(e["scope_id"], e["key"]) for e in events] == [("trip", "plan")]
        kept = result(await first.call_tool("remember", {"text": "the hotel is in Alfama",
                                                         "user_id": "ana"}))
        found = result(await second.call_tool("recall", {"query": "hotel Alfama",
                                                          "user_id": "ana"}))["memories"]
        assert [m["memory_id"] for m in found] == [kept["memory_id"]]


async def test_a_readers_agent_reads_and_is_refused_a_write(redis_server: Any) -> None:
    from .test_access import role_user

    async with role_user(redis_server, "reader", "mcpacl") as (ns, url, _), \
            agent(url, ns) as reader:
        assert result(await reader.call_tool("memory_get", {"scope": "global", "key": "k"}))[
            "found"] is False
        denied = refusal(await reader.call_tool("memory_set", {"scope": "global", "key": "k",
                                                                "value": 1}))
        assert denied.startswith("Error executing tool memory_set: permission denied on key "
                                 "'k'"), denied
        password = url.split("@")[0].rsplit(":", 1)[1]
        assert password not in denied
        # and it still answers
        assert not (await reader.call_tool("memory_list", {"scope": "global"})).is_error


def test_a_usage_error_starts_no_server() -> None:
    from .test_cli import run_script

    done = run_script("mcp", "--nope")
    assert done.returncode == 2 and "No such option" in done.stderr and done.stdout == ""


async def test_streamable_http_with_a_token_and_refused_without(redis_url: str,
                                                                 tmp_path: Any) -> None:
    import socket
    import subprocess
    import time
    import warnings

    import httpx2
    import mcp_types
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPDeprecationWarning

    import redismem

    from .test_cli import run_script

    token = tmp_path / "token"
    token.write_text("not-to-be-printed-" + uuid.uuid4().hex + "\n")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    exe = shutil.which("redismem")
    assert exe is not None
    ns = "mcp-" + uuid.uuid4().hex[:6]
    served = subprocess.Popen([exe, "mcp", "--namespace", ns, "--url", redis_url, "--http",
                               f"127.0.0.1:{port}", "--token-file", str(token)],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:  # until it listens
            assert served.poll() is None, "the HTTP server exited"
            with socket.socket() as attempt:
                if attempt.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "the HTTP server did not start"
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx2.AsyncClient() as anonymous:
            refused = await anonymous.post(url, json={"jsonrpc": "2.0", "id": 1,
                                                      "method": "tools/list"})
            assert refused.status_code == 401
            wrong = await anonymous.post(url, json={}, headers={"Authorization": "Bearer no"})
            assert wrong.status_code == 401
        bearer = {"Authorization": f"Bearer {token.read_text().strip()}"}
        heard: asyncio.Queue[str] = asyncio.Queue()

        async def on_message(message: Any) -> None:
            if isinstance(message, mcp_types.ResourceUpdatedNotification):
                heard.put_nowait(str(message.params.uri))

        async with httpx2.AsyncClient(headers=bearer) as http, \
                streamable_http_client(url, http_client=http) as (read, write), \
                ClientSession(read, write, message_handler=on_message) as session:
            await session.initialize()
            assert {t.name for t in (await session.list_tools()).tools} == TOOLS
            assert result(await session.call_tool("memory_set", {
                "scope": "global", "key": "k", "value": [1]})) == {"revision": 1}
            assert result(await session.call_tool("memory_get", {
                "scope": "global", "key": "k"}))["value"] == [1]
            # a subscription's notification comes on the session's own stream
            uri = f"redismem://{ns}/global/_/k"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await session.subscribe_resource(uri)
            async with await redismem.connect(redis_url, namespace=ns) as other:
                await other.global_scope().set("k", [2])
            assert await asyncio.wait_for(heard.get(), 30) == uri
    finally:
        served.terminate()
        out, err = served.communicate(timeout=30)
    assert b"not-to-be-printed" not in out + err
    # an address other than loopback is refused without a token, before anything starts
    done = run_script("mcp", "--http", f"0.0.0.0:{port}")
    assert done.returncode == 2 and "refusing to serve 0.0.0.0 without --token-file" in \
        done.stderr
    empty = tmp_path / "empty"
    empty.write_text("\n")
    done = run_script("mcp", "--http", f"127.0.0.1:{port}", "--token-file", str(empty))
    assert done.returncode == 2 and "holds no token" in done.stderr
    done = run_script("mcp", "--http", "nowhere")
    assert done.returncode == 2 and "HOST:PORT" in done.stderr


async def test_a_redis_outage_is_an_error_result_and_the_server_recovers(tmp_path: Any) -> None:
    """The server stopped mid-session: a tool call is an 'unavailable' error
    result, not a crash; once Redis is back (same data, same port) calls
    work again in the same session."""
    from redismem.server import EmbeddedServer

    # (the call while Redis is down is answered after the client's retries, about 9 s)

    embedded = EmbeddedServer(tmp_path)
    url = embedded.start().url
    try:
        async with Client(build(url, "outage")) as client:
            assert result(await client.call_tool("memory_set", {
                "scope": "global", "key": "k", "value": 1})) == {"revision": 1}
            embedded.stop()
            down = refusal(await client.call_tool("memory_get", {"scope": "global", "key": "k"}))
            assert "unavailable" in down.lower(), down
            assert EmbeddedServer(tmp_path).start().url == url
            assert result(await client.call_tool("memory_get", {
                "scope": "global", "key": "k"}))["value"] == 1
    finally:
        EmbeddedServer(tmp_path).stop()


# values as resources, and subscriptions to them


async def test_values_are_resources_listed_most_recently_changed_first() -> None:
    from mcp.shared.exceptions import MCPError

    ns = "mcp-" + uuid.uuid4().hex[:6]
    async with Client(build("memory://", ns)) as client:
        written = [("session:s1", "a/b c"), ("global", "g"), ("workflow:w", "é:{x}*"),
                   ("actor:bot", "k")]
        for scope, key in written:
            await client.call_tool("memory_set", {"scope": scope, "key": key,
                                                  "value": {"key": key}})
        await client.call_tool("memory_merge", {"scope": "session:s1", "key": "a/b c",
                                                "patch": {"seen": True}})  # now the latest
        # (the order, most recently changed first: the next test, where the clock is known)
        listed = sorted((await client.list_resources()).resources, key=lambda r: r.name)
        assert [r.name for r in listed] == ["a/b c", "g", "k", "é:{x}*"]
        assert listed[0].uri == f"redismem://{ns}/session/s1/a%2Fb%20c"
        assert [r.meta for r in listed] == [{"revision": 2}] + [{"revision": 1}] * 3
        assert {r.mime_type for r in listed} == {"application/json"}
        assert listed[0].annotations is not None and listed[0].annotations.last_modified
        for item in listed:
            read = (await client.read_resource(item.uri)).contents[0]
            assert read.uri == item.uri and read.mime_type == "application/json"
            assert json.loads(read.text)["key"] == item.name
            assert read.meta == {"revision": item.meta["revision"]}
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["redismem://{namespace}/{scope}/{id}/{key}"]
        await client.call_tool("memory_delete", {"scope": "actor:bot", "key": "k"})
        assert "k" not in [r.name for r in (await client.list_resources()).resources]
        for uri, expected in [
                (f"redismem://{ns}/actor/bot/k", "not found"),
                ("redismem://other/global/_/g", "serves namespace"),
                (f"redismem://{ns}/team/x/g", "unknown scope"),
                (f"redismem://{ns}/global/x/g", "global scope's id"),
                (f"redismem://{ns}/session/s1/", "redismem://NS/SCOPE/ID/KEY"),
                (f"redismem://{ns}/session/a%3Ab/k", "invalid_id"),
                (f"redismem://{ns}/session/s1/a%01b", "control characters"),
                ("file:///etc/passwd", "not a redismem resource")]:
            try:
                await client.read_resource(uri)
            except MCPError as exc:
                assert expected in str(exc), (uri, str(exc))
            else:
                raise AssertionError(f"{uri} was read")
        try:
            await client.list_resources(cursor="nope")
        except MCPError as exc:
            assert "not a cursor" in str(exc)
        else:
            raise AssertionError("a bad cursor was taken")
        assert json.loads((await client.read_resource(listed[0].uri)).contents[0].text)["seen"]


async def test_resources_list_pages_without_repeats_or_gaps() -> None:
    import redismem
    from redismem.mcp_resources import listing

    ns = "mcp-" + uuid.uuid4().hex[:6]
    async with await redismem.connect("memory://", namespace=ns) as memory:
        for i in range(7):
            await memory.session("s").set(f"k{i}", i)
            await memory.workflow("w").set(f"k{i}", i)
        # raw registry members that name no scope are passed over
        from redismem import keys as K

        await memory.client.zadd(K.scopes(ns), {"val:session:bad id": 0, "val:team:x": 0,
                                                "val:global:x": 0, "garbage": 0, b"\xff": 0})
        await clock_past_writes(memory)
        seen: list[str] = []
        cursor = None
        while True:
            page, cursor = await listing(memory, cursor, limit=3)
            assert len(page) <= 3
            seen += [item.uri for item in page]
            if cursor is None:
                break
            await memory.session("s").set("k0", "moved")  # to the front: not listed again
        assert len(seen) == len(set(seen)) == 14
        assert seen[-1] == f"redismem://{ns}/session/s/k0"  # written since the listing began
        await clock_past_writes(memory)
        quiet = [item.uri for item in (await listing(memory, None, limit=100))[0]]
        assert quiet[0] == seen[-1]
        paged, cursor = [], None
        while True:
            page, cursor = await listing(memory, cursor, limit=4)
            paged += page
            if cursor is None:
                break
        assert [item.uri for item in paged] == quiet  # no writes: the same order, paged
        times = [item.changed_ms for item in paged]
        assert times == sorted(times, reverse=True)


async def clock_past_writes(memory: Any) -> None:
    """Wait until the server's clock is past the millisecond of the last
    write (a write in the very millisecond a listing begins counts as
    written since it began)."""
    from redismem.mcp_resources import listing

    last = max(item.changed_ms for item in (await listing(memory, None, limit=10**6))[0])
    while True:
        seconds, micros = await memory.client.time()
        if seconds * 1000 + micros // 1000 > last:
            return
        await asyncio.sleep(0.001)


async def test_a_listen_stream_hears_of_changes_to_its_values() -> None:
    """2026-07-28 clients: subscriptions/listen with the value's URI gets
    resource-updated events for its writes, deletes included, and none for
    other values (writes by other processes: the stdio test below)."""
    from mcp.shared.subscriptions import ResourceUpdated

    ns = "mcp-" + uuid.uuid4().hex[:6]
    uri = f"redismem://{ns}/workflow/w/plan"
    w = {"scope": "workflow:w"}
    async with Client(build("memory://", ns)) as client, \
            client.listen(resource_subscriptions=[uri]) as stream:
        await client.call_tool("memory_set", {**w, "key": "elsewhere", "value": 1})
        await client.call_tool("memory_set", {**w, "key": "plan", "value": {"city": "Lisbon"}})
        assert await anext(stream) == ResourceUpdated(uri=uri)
        await client.call_tool("memory_delete", {**w, "key": "plan"})
        assert await anext(stream) == ResourceUpdated(uri=uri)


@pytest.mark.filterwarnings("ignore:resources/:mcp.shared.exceptions.MCPDeprecationWarning")
async def test_a_subscribed_agent_is_notified_of_other_processes_writes(redis_url: str) -> None:
    """resources/subscribe over stdio, as MCP hosts speak it: writes by
    another agent's server process and by the Python facade each send
    notifications/resources/updated for that value, and only for values
    subscribed to; the write -> notification time is measured."""
    import statistics
    import time

    import mcp_types
    from mcp.shared.exceptions import MCPError

    import redismem

    ns = "mcp-" + uuid.uuid4().hex[:6]
    heard: asyncio.Queue[tuple[str, float]] = asyncio.Queue()

    async def on_message(message: Any) -> None:
        if isinstance(message, mcp_types.ResourceUpdatedNotification):
            heard.put_nowait((str(message.params.uri), time.perf_counter()))

    plan = f"redismem://{ns}/workflow/trip/plan"
    async with agent(redis_url, ns, on_message) as first, agent(redis_url, ns) as second, \
            await redismem.connect(redis_url, namespace=ns) as facade:
        capabilities = first.server_capabilities
        assert capabilities is not None and capabilities.resources is not None
        assert capabilities.resources.subscribe
        await first.subscribe_resource(plan)
        await second.call_tool("memory_set", {"scope": "workflow:trip", "key": "other",
                                              "value": 0})
        await second.call_tool("memory_set", {"scope": "workflow:trip", "key": "plan",
                                              "value": {"city": "Lisbon"}})
        assert (await asyncio.wait_for(heard.get(), 30))[0] == plan  # not "other" first
        assert json.loads((await first.read_resource(plan)).contents[0].text) == {
            "city": "Lisbon"}
        spans = []
        for i in range(30):
            start = time.perf_counter()
            await facade.workflow("trip").set("plan", {"step": i})
            uri, at = await asyncio.wait_for(heard.get(), 30)
            assert uri == plan
            spans.append((at - start) * 1000)
        await facade.workflow("trip").delete("plan")
        assert (await asyncio.wait_for(heard.get(), 30))[0] == plan
        await first.unsubscribe_resource(plan)
        await first.subscribe_resource(f"redismem://{ns}/global/_/flag")
        await facade.workflow("trip").set("plan", 1)  # no longer subscribed
        await facade.global_scope().set("flag", True)
        assert (await asyncio.wait_for(heard.get(), 30))[0] == f"redismem://{ns}/global/_/flag"
        spans.sort()
        print(f"write -> notification over stdio: p50 {statistics.median(spans):.2f} ms, "
              f"p99 {spans[int(0.99 * len(spans))]:.2f} ms")
        try:
            await first.subscribe_resource("redismem://elsewhere/global/_/k")
        except MCPError as exc:
            assert "serves namespace 'mcp-" in str(exc)
        else:
            raise AssertionError("a URI of another namespace was taken")


@pytest.mark.filterwarnings("ignore:resources/:mcp.shared.exceptions.MCPDeprecationWarning")
async def test_a_workers_agent_reads_resources_it_may_and_is_refused_the_rest(
        redis_server: Any) -> None:
    """A worker may read the global scope but not list the namespace's
    scopes nor read the feed: reading a value works; listing and
    subscribing are permission errors that say so, and the server goes on."""
    from mcp.shared.exceptions import MCPError

    import redismem

    from .test_access import role_user

    async with role_user(redis_server, "worker", "mcpw") as (ns, url, _), \
            await redismem.connect(redis_server.url, namespace=ns) as admin, \
            agent(url, ns) as worker:
        await admin.global_scope().set("rules", {"max": 3})
        uri = f"redismem://{ns}/global/_/rules"
        read = (await worker.read_resource(uri)).contents[0]
        assert json.loads(read.text) == {"max": 3} and read.meta == {"revision": 1}
        for attempt in (worker.list_resources, lambda: worker.subscribe_resource(uri)):
            try:
                await attempt()
            except MCPError as exc:
                assert str(exc).startswith("permission denied"), str(exc)
                assert url.split("@")[0].rsplit(":", 1)[1] not in str(exc)  # no password
            else:
                raise AssertionError("a worker listed or subscribed")
        assert json.loads((await worker.read_resource(uri)).contents[0].text) == {"max": 3}
    # a 2026-07-28 client's listen stream is refused the same way
    async with role_user(redis_server, "worker", "mcpw") as (ns, url, _), \
            Client(build(url, ns)) as client:
        try:
            async with client.listen(resource_subscriptions=[f"redismem://{ns}/global/_/r"]):
                pass
        except MCPError as exc:
            assert str(exc).startswith("permission denied"), str(exc)
        else:
            raise AssertionError("a worker's listen stream was acknowledged")
        assert result(await client.call_tool("memory_get", {"scope": "global", "key": "r"}))[
            "found"] is False  # and it goes on serving


# recall by meaning: an embedder


CONCEPTS = {"peanut": 0, "peanuts": 0, "nut": 0, "allergic": 1, "allergy": 1, "hotel": 2,
            "stay": 2, "lisbon": 3}


def toy_embedding(text: str) -> list[float]:
    """A vector per concept: words of one meaning share a dimension."""
    vector = [0.0] * 5
    for word in text.lower().split():
        vector[CONCEPTS.get(word.strip(".,?"), 4)] += 1.0
    return vector


async def test_recall_by_meaning_with_an_embedder_and_by_words_without() -> None:
    from redismem.embedders import Embedder

    for embedder in (None, Embedder("toy", toy_embedding)):
        async with Client(build("memory://", "mcp-" + uuid.uuid4().hex[:6], embedder)) as client:
            recall = {t.name: t for t in (await client.list_tools()).tools}["recall"]
            assert ("BM25 (no embedding model" in recall.description) is (embedder is None)
            kept = result(await client.call_tool("remember", {
                "text": "Ana is allergic to peanuts", "user_id": "ana"}))["memory_id"]
            await client.call_tool("remember", {"text": "Ana flies to Lisbon",
                                                "user_id": "ana"})
            found = result(await client.call_tool("recall", {"query": "nut allergy",
                                                             "user_id": "ana"}))["memories"]
            if embedder is None:  # no word in common
                assert found == []
                continue
            assert "embedder toy" in recall.description
            assert [m["memory_id"] for m in found] == [kept]  # Lisbon: not similar enough
            both = result(await client.call_tool("recall", {"query": "peanuts",
                                                            "user_id": "ana"}))["memories"]
            assert [m["memory_id"] for m in both] == [kept]
            assert both[0]["score"] > found[0]["score"]  # found by words and by meaning


async def test_a_failing_embedder_is_an_error_result_and_the_server_goes_on() -> None:
    from redismem.embedders import Embedder

    def broken(text: str) -> Any:
        if text == "raise":
            raise RuntimeError("model not loaded")
        return {"text": "a vector?"} if text == "dict" else [0.0, 0.0] if text == "zero" else \
            [1.0, 2.0]

    async with Client(build("memory://", "mcp-" + uuid.uuid4().hex[:6],
                            Embedder("broken", broken))) as client:
        for text, expected in [("raise", "the embedder broken failed: RuntimeError: model not "
                                         "loaded"),
                               ("dict", "invalid_vector"), ("zero", "zero vector")]:
            assert expected in refusal(await client.call_tool("remember", {"text": text})), text
            assert expected in refusal(await client.call_tool("recall", {"query": text})), text
        assert result(await client.call_tool("remember", {"text": "fine"}))["memory_id"]
        assert [m["text"] for m in result(await client.call_tool("recall", {
            "query": "fine"}))["memories"]] == ["fine"]


def test_the_embedder_option_refuses_what_it_cannot_load() -> None:
    from redismem.embedders import load

    from .test_cli import run_script

    for spec, expected in [("nope.nothing:f", "cannot import the embedder's module"),
                           ("json:no.such", "module 'json' has no 'no.such'"),
                           ("json:__doc__", "is not callable"),
                           ("bogus", "none, auto, wordllama or MODULE:CALLABLE")]:
        done = run_script("mcp", "--embedder", spec)
        assert done.returncode == 2 and expected in done.stderr, (spec, done.stderr)
    assert load("none") is None
    chosen = load("auto")  # the embed extra is installed with the tests
    assert chosen is not None and chosen.name == "wordllama"


async def test_wordllama_recalls_by_meaning_over_stdio(redis_url: str) -> None:
    """The embed extra's local model (no network), named as MODULE:CALLABLE,
    on the real server's vector index."""
    import numpy as np

    from redismem.embedders import wordllama

    vector = np.asarray(wordllama("peanut allergy"))
    assert vector.shape == (256,) and np.isfinite(vector).all()
    ns = "mcp-" + uuid.uuid4().hex[:6]
    async with agent(redis_url, ns, embedder="redismem.embedders:wordllama") as session:
        ids = {text: result(await session.call_tool("remember", {
            "text": text, "user_id": "ana"}))["memory_id"]
            for text in ["Ana is allergic to peanuts", "the hotel is in Alfama",
                         "the budget is 2000 euros"]}
        for query, expected in [("nut allergy", "Ana is allergic to peanuts"),
                                ("where is the accommodation", "the hotel is in Alfama"),
                                ("how much money can we spend", "the budget is 2000 euros")]:
            found = result(await session.call_tool("recall", {"query": query,
                                                              "user_id": "ana"}))["memories"]
            assert found and found[0]["memory_id"] == ids[expected], (query, found)


@given(st.lists(st.lists(st.sampled_from("abcdefgh"), unique=True, max_size=8), max_size=3))
def test_reciprocal_rank_fusion(rankings: list[list[str]]) -> None:
    from redismem.mcp_server import RRF_K, fused
    from redismem.types import LongTermMemory

    def memory(mid: str) -> LongTermMemory:
        return LongTermMemory(mid, None, "knowledge", {}, mid, [], {}, 0, 0)

    out = fused([[memory(mid) for mid in ranking] for ranking in rankings])
    ids = [m.id for m, _ in out]
    assert sorted(ids) == sorted({mid for ranking in rankings for mid in ranking})
    for m, score in out:
        assert score == sum(1.0 / (RRF_K + r.index(m.id) + 1) for r in rankings if m.id in r)
    assert [s for _, s in out] == sorted((s for _, s in out), reverse=True)


async def test_every_tool_and_bad_input_over_stdio_on_the_real_server(redis_url: str) -> None:
    """Each tool's round trip, then every kind of bad input, through
    ``redismem mcp`` as a subprocess on the real server: each refusal an
    error result, and the server answers after all of them."""
    ns = "mcp-" + uuid.uuid4().hex[:6]
    s = {"scope": "session:s1"}
    async with agent(redis_url, ns) as session:
        call = session.call_tool
        assert result(await call("memory_set", {**s, "key": "notes", "value": {"a": 1},
                                                "ttl_seconds": 3600})) == {"revision": 1}
        assert result(await call("memory_merge", {**s, "key": "notes", "patch": {"b": 2}})) == {
            "revision": 2}
        assert result(await call("memory_get", {**s, "key": "notes"}))["value"] == {"a": 1,
                                                                                    "b": 2}
        assert result(await call("memory_list", {**s}))["keys"] == [{"key": "notes",
                                                                     "revision": 2}]
        assert [e["action"] for e in result(await call("memory_changes", {}))["events"]] == [
            "set", "merge"]
        assert result(await call("memory_delete", {**s, "key": "notes",
                                                   "expected_revision": 2})) == {"deleted": True}
        ids = result(await call("thread_append", {"thread_id": "t", "events": [{"n": 1}]}))[
            "ids"]
        assert [e["id"] for e in result(await call("thread_recent", {"thread_id": "t"}))[
            "events"]] == ids
        kept = result(await call("remember", {"text": "the key is under the mat"}))
        assert result(await call("recall", {"query": "mat"}))["memories"][0][
            "memory_id"] == kept["memory_id"]
        assert result(await call("forget", kept)) == kept
        assert result(await call("recall", {"query": "mat"}))["memories"] == []
        for tool, arguments, expected in [
                ("memory_set", {**s, "key": "k", "value": 1, "expected_revision": 4},
                 "conflict"),
                ("memory_get", {"scope": "team:x", "key": "k"}, "unknown scope"),
                ("memory_get", {**s, "key": ""}, "key"),
                ("memory_get", {**s, "key": "k" * 600}, "key"),
                ("memory_set", {**s, "key": "big", "value": "x" * 200_000}, "value_too_large"),
                ("memory_list", {**s, "limit": -1}, "limit"),
                ("memory_changes", {"after": -1}, "after"),
                ("recall", {"query": " "}, "the query is empty"),
                ("thread_append", {"thread_id": "a b", "events": [{}]}, "invalid_id")]:
            assert expected in refusal(await call(tool, arguments)), (tool, arguments)
        assert result(await call("memory_get", {**s, "key": "k"}))["found"] is False


async def test_a_listing_ending_its_older_values_on_a_page_boundary_misses_no_later_one(
        ) -> None:
    import redismem
    from redismem.mcp_resources import Listings, listing

    async with await redismem.connect("memory://", namespace="b" + uuid.uuid4().hex[:6]
                                      ) as memory:
        scope = memory.workflow("w")
        for key in ("m", "n", "o", "p"):
            await scope.set(key, 1)
        await clock_past_writes(memory)
        for lister in (listing, Listings().page):
            seen: list[str] = []
            page, cursor = await lister(memory, None, 2)
            await scope.set(f"a{len(seen)}{lister is listing}", 2)  # sorts first among the late
            while True:
                seen += [item.key for item in page]
                if cursor is None:
                    break
                page, cursor = await lister(memory, cursor, 2)
            assert sorted(seen[:4]) == ["m", "n", "o", "p"] and len(seen) == 5, seen
            await scope.delete(seen[-1])


@pytest.mark.parametrize("seed", range(6))
async def test_kept_listings_give_the_pages_a_fresh_read_gives(seed: int,
                                                               monkeypatch: Any) -> None:
    """Listings reads the namespace for a listing's first page only, and
    then the change feed; at every page, with writes, deletes and new keys
    between pages, its page is the one listing() reads afresh."""
    import random

    import redismem
    from redismem import mcp_resources
    from redismem.mcp_resources import Listings, listing

    rng = random.Random(seed)
    async with await redismem.connect("memory://", namespace="k" + uuid.uuid4().hex[:6]
                                      ) as memory:
        scopes = [memory.session("s"), memory.workflow("w"), memory.global_scope()]
        for i in range(rng.randrange(0, 30)):
            await rng.choice(scopes).set(f"k{i}", i)
        if rng.random() < 0.5:
            await clock_past_writes(memory)
        kept = Listings()
        reads = 0
        real = mcp_resources._all_values

        async def counted(m: Any) -> Any:
            nonlocal reads
            reads += 1
            return await real(m)

        monkeypatch.setattr(mcp_resources, "_all_values", counted)
        limit = rng.randrange(1, 6)
        _, cursor = await kept.page(memory, None, limit)
        while cursor is not None:
            for _ in range(rng.randrange(0, 4)):
                scope, key = rng.choice(scopes), f"k{rng.randrange(40)}"
                if rng.random() < 0.3:
                    await scope.delete(key)
                else:
                    await scope.set(key, rng.random())
            before = reads
            fresh = await listing(memory, cursor, limit)
            assert reads == before + 1
            assert await kept.page(memory, cursor, limit) == fresh
            assert reads == before + 1  # the kept listing read only the feed
            cursor = fresh[1]
        # and a cursor another process (without the snapshot) is given works too
        other = Listings()
        _, cursor = await kept.page(memory, None, limit)
        if cursor is not None:
            assert await other.page(memory, cursor, limit) == await listing(memory, cursor,
                                                                             limit)


@pytest.mark.parametrize("server", ["redis", "cluster"], indirect=True)
async def test_resources_and_listen_on_the_real_server_and_a_cluster(server_url: str) -> None:
    from mcp.shared.subscriptions import ResourceUpdated

    import redismem

    ns = "mcp-" + uuid.uuid4().hex[:6]
    uri = f"redismem://{ns}/session/s1/plan"
    async with Client(build(server_url, ns)) as client, \
            await redismem.connect(server_url, namespace=ns) as other:
        await other.session("s1").set("plan", {"city": "Lisbon"})
        await other.global_scope().set("rules", [1])
        assert sorted(r.uri for r in (await client.list_resources()).resources) == [
            f"redismem://{ns}/global/_/rules", uri]
        read = (await client.read_resource(uri)).contents[0]
        assert json.loads(read.text) == {"city": "Lisbon"} and read.meta == {"revision": 1}
        async with client.listen(resource_subscriptions=[uri]) as stream:
            await other.global_scope().set("rules", [2])
            await other.session("s1").set("plan", {"city": "Porto"})
            assert await anext(stream) == ResourceUpdated(uri=uri)
