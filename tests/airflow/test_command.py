"""``workflow-hub airflow`` parses its arguments and hands the rest to ``serve_airflow``."""

from __future__ import annotations

import pytest

from workflow_hub._cli import main


def test_a_url_that_is_not_http_is_a_usage_mistake(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["airflow", "--url", "ftp://airflow"]) == 2
    assert "--url" in capsys.readouterr().err


def test_a_bad_label_is_a_usage_mistake_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["airflow", "--url", "http://localhost:8080", "--label", "9bad=x"]) == 2
    assert "9bad" in capsys.readouterr().err


def test_a_missing_password_file_is_a_usage_mistake(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["airflow", "--url", "http://localhost:8080", "--password-file", "/nonexistent"])
    assert code == 2
    assert "--password-file" in capsys.readouterr().err


def test_a_bad_conf_label_key_is_a_usage_mistake_naming_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["airflow", "--url", "http://localhost:8080", "--label-conf", "9bad"]) == 2
    err = capsys.readouterr().err
    assert "--label-conf" in err
    assert "9bad" in err
