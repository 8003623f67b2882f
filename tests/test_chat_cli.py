"""`mnemo chat` against a real local chat-completions server."""

import io

from mnemo.cli import main
from support.openai_server import OpenAIServer, Reply


def test_chat_saves_memory_through_tool_calls_and_ends_on_eof(tmp_path, monkeypatch, capsys):
    replies = [
        Reply.tool_calls(("memory", {"target": "user", "action": "add", "content": "Name: Ada"})),
        Reply.text("Hi Ada."),
    ]
    monkeypatch.setattr("sys.stdin", io.StringIO("I'm Ada\n"))
    with OpenAIServer(replies) as server:
        code = main(["--home", str(tmp_path), "chat", "--base-url", server.base_url, "--model", "test-model"])
    assert code == 0
    assert "agent> Hi Ada." in capsys.readouterr().out
    assert "Name: Ada" in (tmp_path / "memories" / "USER.md").read_text()


def test_chat_without_a_configured_model_exits_with_a_reason(tmp_path, monkeypatch, capsys):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "MNEMO_LLM_BASE_URL", "MNEMO_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    assert main(["--home", str(tmp_path), "chat"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("mnemo: ") and len(err.strip().splitlines()) == 1
