"""``mnemo serve --http``: bearer tokens mapped to users, no cross-user read, concurrent sessions,
disconnects and malformed requests, driven by the official MCP client against a real server."""

from __future__ import annotations

import subprocess

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mnemo import AgentMemory
from support.mcp_clients import (
    ALICE_TOKEN,
    BOB_TOKEN,
    INITIALIZE,
    http_server,
    http_session,
    notification_methods,
    result_json,
    serve_command,
    two_user_config,
    write_config,
)

pytestmark = pytest.mark.anyio

_ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("serve-http") / "home"
    two_user_config(home)
    return home


@pytest.fixture(scope="module")
def url(shared_home):
    with http_server(shared_home) as address:
        yield address


async def test_a_request_without_a_token_is_refused(url):
    async with httpx2.AsyncClient() as client:
        response = await client.post(url, json=INITIALIZE, headers=_ACCEPT)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")


async def test_a_wrong_token_is_refused(url):
    async with httpx2.AsyncClient() as client:
        response = await client.post(
            url, json=INITIALIZE, headers={**_ACCEPT, "Authorization": "Bearer not-a-known-token-at-all"}
        )
    assert response.status_code == 401


async def test_the_official_client_with_a_wrong_token_fails_to_connect(url):
    with pytest.raises(BaseException):  # noqa: B017 - the SDK wraps the 401 in its own exception group
        async with http_session(url, "wrong-token-0123456789abcdef"):
            pass


async def test_two_users_with_two_tokens_never_see_each_others_memory(url, shared_home):
    async with http_session(url, ALICE_TOKEN) as alice:
        saved = result_json(await alice.call_tool("remember", {"content": "Alice's passphrase hint: the zebra"}))
        await alice.call_tool("memory", {"target": "user", "action": "add", "content": "Alice lives in Lisbon"})
    async with http_session(url, BOB_TOKEN) as bob:
        recalled = result_json(await bob.call_tool("recall", {"query": "passphrase zebra"}))
        with pytest.raises(MCPError, match="not found"):
            await bob.read_resource(f"mnemo://memories/{saved['id']}")
        profile = (await bob.read_resource("mnemo://curated/USER.md")).contents[0].text
        await bob.call_tool("memory", {"target": "user", "action": "add", "content": "Bob lives in Oslo"})
    async with http_session(url, ALICE_TOKEN) as alice:
        own = (await alice.read_resource(f"mnemo://memories/{saved['id']}")).contents[0].text
        alice_profile = (await alice.read_resource("mnemo://curated/USER.md")).contents[0].text
    assert recalled["count"] == 0
    assert "Lisbon" not in profile
    assert "zebra" in own
    assert "Lisbon" in alice_profile and "Oslo" not in alice_profile


async def test_a_session_id_is_useless_with_another_users_token(url):
    async with httpx2.AsyncClient(timeout=30) as client:
        opened = await client.post(url, json=INITIALIZE, headers={**_ACCEPT, "Authorization": f"Bearer {ALICE_TOKEN}"})
        session_id = opened.headers["mcp-session-id"]
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
        headers = {
            **_ACCEPT,
            "Authorization": f"Bearer {BOB_TOKEN}",
            "Mcp-Session-Id": session_id,
            "Mcp-Protocol-Version": "2025-06-18",
        }
        hijack = await client.post(url, json=call, headers=headers)
    assert "belongs to another user" in hijack.text
    assert '"tools"' not in hijack.text


async def test_concurrent_sessions_all_land(url, shared_home):
    async def client(number: int) -> None:
        async with http_session(url, ALICE_TOKEN) as session:
            for item in range(5):
                result = await session.call_tool(
                    "remember", {"content": f"concurrent note {number}-{item} about walruses"}
                )
                assert not result.is_error, result_json(result)

    async with anyio.create_task_group() as group:
        for number in range(4):
            group.start_soon(client, number)
    with AgentMemory.open("check", shared_home, user_id="alice") as memory:
        assert len(memory.recall("walruses concurrent note", limit=50)) == 20


async def test_a_client_that_disconnects_mid_call_leaves_the_server_serving(url):
    with anyio.move_on_after(0.05):
        async with http_session(url, ALICE_TOKEN) as session:
            while True:
                await session.call_tool("remember", {"content": "written while the client walks away"})
    async with http_session(url, ALICE_TOKEN) as session:
        result = await session.call_tool("recall", {"query": "client walks away"})
    assert not result.is_error


async def test_malformed_requests_get_errors_and_change_nothing(url):
    headers = {**_ACCEPT, "Authorization": f"Bearer {ALICE_TOKEN}"}
    async with httpx2.AsyncClient(timeout=30) as client:
        garbage = await client.post(url, content=b"{not json", headers=headers)
        wrong_shape = await client.post(url, json=[1, 2, 3], headers=headers)
        huge = await client.post(url, content=b"x" * (5 * 1024 * 1024), headers=headers)
    assert garbage.status_code >= 400 and wrong_shape.status_code >= 400 and huge.status_code >= 400
    async with http_session(url, ALICE_TOKEN) as session:
        assert [t.name for t in (await session.list_tools()).tools][0] == "memory"


def test_refuses_to_listen_beyond_loopback_without_a_token(tmp_path):
    write_config(tmp_path / "home")
    done = subprocess.run(
        serve_command(tmp_path / "home", "--http", "0.0.0.0:0"), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert "without a bearer token" in done.stderr


def test_tokens_for_several_users_need_per_user_curated_files(tmp_path):
    write_config(
        tmp_path / "home",
        f'[[serve.tokens]]\ntoken = "{ALICE_TOKEN}"\nuser_id = "alice"\n[[serve.tokens]]\ntoken = "{BOB_TOKEN}"\nuser_id = "bob"\n',
    )
    done = subprocess.run(
        serve_command(tmp_path / "home", "--http", "127.0.0.1:0"), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert "curated_per_user" in done.stderr


async def test_the_serve_token_variable_opens_the_configured_users_memory(tmp_path):
    home = tmp_path / "home"
    write_config(home, 'user_id = "carol"\n')
    token = "carol-token-0123456789abcdef"
    with http_server(home, env={"MNEMO_SERVE_TOKEN": token}) as address:
        async with http_session(address, token) as session:
            saved = result_json(await session.call_tool("remember", {"content": "Carol owns the release train"}))
    with AgentMemory.open("check", home, user_id="carol") as memory:
        assert memory.get_memory(saved["id"]).scope.user_id == "carol"


async def test_a_curated_edit_announces_that_the_resources_changed(url):
    seen: list = []
    async with http_session(url, ALICE_TOKEN, notifications=seen) as session:
        await session.call_tool("memory", {"target": "memory", "action": "add", "content": "Backups run at 02:00"})
        with anyio.fail_after(10):
            while "notifications/resources/list_changed" not in notification_methods(seen):
                await anyio.sleep(0.05)


def test_a_token_without_http_is_a_usage_error(tmp_path):
    write_config(tmp_path / "home")
    done = subprocess.run(
        serve_command(tmp_path / "home", "--token", ALICE_TOKEN), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "--token only applies with --http" in done.stderr


async def test_a_2026_client_shares_one_session_per_user_and_still_sees_only_its_own(tmp_path):
    home = tmp_path / "home"
    two_user_config(home)

    async def calls(address: str, token: str, text: str) -> dict:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            async with Client(streamable_http_client(address, http_client=http)) as client:
                assert client.protocol_version in MODERN_PROTOCOL_VERSIONS
                for _ in range(3):
                    await client.call_tool("remember", {"content": text})
                return result_json(await client.call_tool("recall", {"query": "modern client note"}))

    with http_server(home) as address:
        alice = await calls(address, ALICE_TOKEN, "Alice's modern client note")
        bob = await calls(address, BOB_TOKEN, "Bob's modern client note")
    assert {r["content"] for r in alice["results"]} == {"Alice's modern client note"}
    assert {r["content"] for r in bob["results"]} == {"Bob's modern client note"}
    for user in ("alice", "bob"):
        with AgentMemory.open(f"check-{user}", home, user_id=user) as memory:
            archived = [s for s in memory._archive().archive.list_sessions() if s.id.startswith("mcp-")]
        assert len(archived) == 1
