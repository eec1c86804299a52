"""``redismem mcp``: the tools through the MCP SDK's own client, in-process
on ``memory://`` for the logic, and as MCP hosts run it (``redismem mcp``
started as a subprocess, ``ClientSession`` over ``stdio_client``) on the
real server: two agents on one namespace, a conflict, a reader's agent
refused, every bad input answered as an error while the server goes on."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

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
async def agent(url: str, namespace: str) -> AsyncIterator[ClientSession]:
    """``redismem mcp`` started as an MCP host starts it."""
    exe = shutil.which("redismem")
    assert exe is not None
    params = StdioServerParameters(command=exe, args=["mcp", "--namespace", namespace],
                                   env={"REDISMEM_URL": url, "PATH": os.environ["PATH"]})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
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

    import httpx2
    from mcp.client.streamable_http import streamable_http_client

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
        async with httpx2.AsyncClient(headers=bearer) as http, \
                streamable_http_client(url, http_client=http) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            assert {t.name for t in (await session.list_tools()).tools} == TOOLS
            assert result(await session.call_tool("memory_set", {
                "scope": "global", "key": "k", "value": [1]})) == {"revision": 1}
            assert result(await session.call_tool("memory_get", {
                "scope": "global", "key": "k"}))["value"] == [1]
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
