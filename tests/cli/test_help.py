"""``--help`` of every command names its key options (issue 24), and building the parser for one
command imports no other command's module (so ``status`` stays cheap)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from workflow_hub._cli import SUBCOMMANDS, main

KEY_OPTIONS = {
    None: ["--version", "--debug", "WORKFLOW_HUB_DEBUG", "exit status", *SUBCOMMANDS],
    "demo": ["--duration", "--serve", "--json", "--seed", "--token", "--metrics-port"],
    "serve": [
        "--port",
        "--host",
        "--token",
        "--redis",
        "--fleet",
        "--duration",
        "end the whole command",
        "20-second story",
        "again and again",
    ],
    "watch": ["redis://", "http://", "--token", "--duration", "--prefix", "--stale-after"],
    "status": [
        "redis://",
        "--format",
        "--json",
        "--follow",
        "--token",
        "exit status: 0 idle, 1 working, 2 blocked or needs attention, 3 unknown",
        "status-right",
        "{symbol}",
        "{awaiting_input}",
    ],
    "snapshot": ["--token", "--timeout", "http://"],
    "conformance": ["--adapter", "--examples", "--seed"],
}


@pytest.mark.parametrize("command", list(KEY_OPTIONS))
def test_help_names_the_key_options(
    command: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--help"] if command is None else [command, "--help"]
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    missing = [option for option in KEY_OPTIONS[command] if option not in text]
    assert not missing, f"{command} --help does not mention {missing}:\n{text}"


def test_status_loads_no_other_command_nor_a_heavy_library() -> None:
    """The one-shot path of ``status``: no httpx, rich, hypothesis, Redis, server, prometheus,
    nor cattrs (decoding needs none)."""
    program = (
        "import sys\n"
        "from workflow_hub._cli import main\n"
        "try:\n"
        "    main(['status', 'http://127.0.0.1:1'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ['httpx', 'rich', 'hypothesis', 'coredis', 'hypercorn', 'starlette',\n"
        "         'prometheus_client', 'cattrs', 'workflow_hub._cli._demo', 'workflow_hub._cli._watch',\n"
        "         'workflow_hub._cli._serve', 'workflow_hub.remote', 'workflow_hub.server']\n"
        "print(sorted(name for name in heavy if name in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.splitlines()[-1] == "[]", result.stdout
