"""``watch`` and ``serve`` are one command each for every kind of source: ``watch`` takes http://
and redis:// URLs, ``serve`` runs the demo served over HTTP, mirrored into Redis (``--redis``) or
serves a fleet (``--fleet``). Here the modes' entry points are replaced by recorders, so the tests
see which mode each command line reaches and with which options.

The command line is not an API: these tests drive the internal ``workflow_hub._cli`` in process."""

from __future__ import annotations

import argparse

import pytest

from workflow_hub._cli import _serve, _watch, main


@pytest.fixture
def modes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, argparse.Namespace]]:
    calls: list[tuple[str, argparse.Namespace]] = []

    def recorder(mode: str):  # type: ignore[no-untyped-def]
        def run(args: argparse.Namespace) -> int:
            calls.append((mode, args))
            return 7

        return run

    monkeypatch.setattr(_watch, "run_watch", recorder("watch redis"))
    monkeypatch.setattr(_watch, "_watch_http", recorder("watch http"))
    monkeypatch.setattr(_serve, "run_serve", recorder("serve redis"))
    monkeypatch.setattr(_serve, "run_fleet", recorder("serve fleet"))
    monkeypatch.setattr(_serve, "_run_demo", recorder("serve demo"))
    return calls


def test_watch_takes_an_http_url_with_its_token(
    modes: list[tuple[str, argparse.Namespace]],
) -> None:
    assert main(["watch", "http://127.0.0.1:8765", "--token", "t"]) == 7
    [(mode, args)] = modes
    assert mode == "watch http"
    assert (args.url, args.token) == ("http://127.0.0.1:8765", "t")


def test_watch_takes_a_redis_url_with_its_prefix(
    modes: list[tuple[str, argparse.Namespace]],
) -> None:
    assert main(["watch", "redis://127.0.0.1:6379/0", "--prefix", "p"]) == 7
    [(mode, args)] = modes
    assert mode == "watch redis"
    assert args.prefix == "p"


def test_serve_without_redis_runs_the_served_demo(
    modes: list[tuple[str, argparse.Namespace]],
) -> None:
    assert main(["serve", "--seed", "3"]) == 7
    assert [(mode, args.seed) for mode, args in modes] == [("serve demo", 3)]


def test_serve_with_redis_mirrors_and_with_fleet_serves_the_fleet(
    modes: list[tuple[str, argparse.Namespace]],
) -> None:
    assert main(["serve", "--redis", "redis://127.0.0.1:1/0", "--source", "s"]) == 7
    assert main(["serve", "--fleet", "redis://127.0.0.1:1/0"]) == 7
    assert [mode for mode, _ in modes] == ["serve redis", "serve fleet"]


def test_serve_with_redis_needs_a_source(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--redis", "redis://127.0.0.1:1/0"]) == 2
    assert "--source" in capsys.readouterr().err
