"""``watch`` and ``serve`` take Redis options and hand everything else to the network server's
commands when those are installed (here: stand-ins), so one command takes both kinds of URL.

The command line is not an API: these tests drive the internal ``workflow_hub._cli`` in process."""

from __future__ import annotations

import argparse
import sys
import types

import pytest

from workflow_hub._cli import main


def _stand_in(name: str, calls: list[argparse.Namespace]) -> types.ModuleType:
    module = types.ModuleType(name)

    def add_arguments(parser: argparse.ArgumentParser) -> None:
        if name.endswith("_watch_cli"):
            parser.add_argument("url")
        parser.add_argument("--token", default=None)
        parser.add_argument("--duration", type=float, default=None)
        if name.endswith("_serve_cli"):
            parser.add_argument("--seed", type=int, default=None)

    def run(args: argparse.Namespace) -> int:
        calls.append(args)
        return 7

    module.add_arguments = add_arguments  # type: ignore[attr-defined]
    module.run = run  # type: ignore[attr-defined]
    return module


@pytest.fixture
def server_commands(monkeypatch: pytest.MonkeyPatch) -> list[argparse.Namespace]:
    calls: list[argparse.Namespace] = []
    for name in ("workflow_hub._watch_cli", "workflow_hub._serve_cli"):
        monkeypatch.setitem(sys.modules, name, _stand_in(name, calls))
    return calls


def test_watch_hands_an_http_url_to_the_server_command(
    server_commands: list[argparse.Namespace],
) -> None:
    assert main(["watch", "http://127.0.0.1:8765", "--token", "t"]) == 7
    assert server_commands[0].url == "http://127.0.0.1:8765"
    assert server_commands[0].token == "t"


def test_serve_without_redis_is_the_server_command(
    server_commands: list[argparse.Namespace],
) -> None:
    assert main(["serve", "--seed", "3"]) == 7
    assert server_commands[0].seed == 3


def test_serve_with_redis_needs_a_source(server_commands: list[argparse.Namespace]) -> None:
    assert main(["serve", "--redis", "redis://127.0.0.1:1/0"]) == 2
    assert server_commands == []


def test_without_the_server_watch_refuses_an_http_url(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("workflow_hub._watch_cli", "workflow_hub._serve_cli"):
        monkeypatch.setitem(sys.modules, name, None)  # as in a build without the server
    assert main(["watch", "http://127.0.0.1:8765"]) == 2
    assert "redis://" in capsys.readouterr().err
