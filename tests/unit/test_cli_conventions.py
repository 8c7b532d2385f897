"""The command line as users of flux and argocd expect it: every flag explained with its
default, examples in --help, a version command, shell completion."""

from __future__ import annotations

import argparse

import pytest

from gitgate.cli import main
from gitgate.cli.parser import build_parser


def commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_flag_and_argument_has_help():
    missing = [f"{name} {action.option_strings or action.dest}"
               for name, command in commands(build_parser()).items()
               for action in command._actions
               if not isinstance(action, argparse._HelpAction) and not action.help]
    assert missing == []


def test_help_shows_defaults_once_and_examples(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = capsys.readouterr().out
    assert "--interval INTERVAL   how often to fetch (default: 1m)" in text
    assert "examples:" in text
    assert text.count("default:") == text.count("(default")  # no "(default: None)"
    assert "(default: None)" not in text and "(default: False)" not in text
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "gitgate pause 'shop/*' --reason INC-42" in capsys.readouterr().out


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(shell, capsys):
    assert main(["completion", shell]) == 0
    script = capsys.readouterr().out
    assert "gitgate" in script and "_ARGCOMPLETE" in script or "complete" in script


@pytest.mark.parametrize("name", ["Replica-A", "a_b", "-a", "a-", "", "a" * 64, "a.b"])
def test_a_replica_name_that_could_fold_into_another_lease_is_refused(name, capsys):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["run", "--repo", "r", "--shard", f"--identity={name}"])
    assert exit_.value.code == 2
    said = capsys.readouterr().err
    assert "--identity" in said and "is not a replica name" in said and "pod's name" in said


def test_a_replica_name_like_a_pods_is_taken():
    args = build_parser().parse_args(["run", "--repo", "r", "--shard",
                                      "--identity", "gitgate-7d9f-x2k4q"])
    assert args.identity == "gitgate-7d9f-x2k4q"
