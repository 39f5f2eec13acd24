"""``workflow-hub conformance``: check an external process against the reference model.

The process speaks the JSON-lines adapter protocol (``docs/conformance.md``) and declares, in
its ``hello`` answer, the profiles of the contract it implements; the command checks exactly
those (``--profile`` narrows to some, ``--without`` leaves some out) and says which it checked.
Exit status: 0 when every scenario agrees with the model, 1 on a disagreement (the shrunk
scenario is printed, with a command line that reproduces it), 2 when the adapter cannot be
started, does not speak the protocol, or the profiles asked for are not declared. Hypothesis is
imported by ``run`` only, so that other subcommands never load it.
"""

from __future__ import annotations

import argparse
import random
import shlex
from collections.abc import Callable, Sequence

from ..testing import defaults
from ._command_line import command_name
from ._errors import UsageError
from ._options import seconds

__all__ = ["add_arguments", "run"]

_STYLES = defaults.STYLES
PROFILES = defaults.PROFILES


def _names_among(allowed: Sequence[str], expected: str) -> Callable[[str], tuple[str, ...]]:
    """An option type: a comma-separated list of names, each one of ``allowed``."""

    def names(text: str) -> tuple[str, ...]:
        given = tuple(part.strip() for part in text.split(",") if part.strip())
        if not given or any(name not in allowed for name in given):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return given

    return names


_styles = _names_among(_STYLES, f"a comma-separated list of {' and '.join(_STYLES)}")
_profiles = _names_among(
    PROFILES, f"a comma-separated list of profiles among {', '.join(PROFILES)}"
)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--adapter",
        required=True,
        metavar="'CMD ARGS'",
        help="the command that starts the adapter process (split like a shell would)",
    )
    parser.add_argument(
        "--examples",
        type=_positive_int,
        default=defaults.EXAMPLES,
        metavar="N",
        help=f"scenarios to generate (default: {defaults.EXAMPLES})",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        metavar="S",
        help="seed for the scenarios, to reproduce a run (default: a random one, printed)",
    )
    parser.add_argument(
        "--max-steps",
        type=_positive_int,
        default=defaults.MAX_STEPS,
        metavar="N",
        help=f"operations per scenario at most (default: {defaults.MAX_STEPS})",
    )
    parser.add_argument(
        "--profile",
        type=_profiles,
        action="append",
        default=None,
        metavar="PROFILES",
        help=f"check only these of the declared profiles ({', '.join(PROFILES)}; repeatable or "
        "comma-separated; source is always needed). Default: every profile the adapter declares",
    )
    parser.add_argument(
        "--without",
        type=_profiles,
        action="append",
        default=None,
        metavar="PROFILES",
        help="leave these profiles out of the check (repeatable or comma-separated)",
    )
    parser.add_argument(
        "--styles",
        type=_styles,
        default=None,
        metavar="STYLES",
        help="observer styles to attach: callback,stream (default: both; without the stream "
        "profile, callback only)",
    )
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=10.0,
        metavar="SECONDS",
        help="how long to wait for each answer of the adapter, start-up aside (default: 10)",
    )


def _flatten(groups: list[tuple[str, ...]] | None) -> list[str]:
    return [name for group in groups or () for name in group]


def _chosen(args: argparse.Namespace, declared: tuple[str, ...]) -> tuple[str, ...]:
    """The profiles asked for: ``--profile`` (or the declared ones), less ``--without``."""
    asked = _flatten(args.profile) or list(declared)
    left_out = set(_flatten(args.without))
    return tuple(name for name in PROFILES if name in asked and name not in left_out)


def _reproduce(args: argparse.Namespace, seed: int, profiles: tuple[str, ...]) -> str:
    """A command line that runs the same scenarios again: every option that shaped the run."""
    parts = [
        f"{command_name()} conformance",
        f"--adapter {shlex.quote(args.adapter)}",
        f"--examples {args.examples}",
        f"--seed {seed}",
        f"--max-steps {args.max_steps}",
        f"--timeout {args.timeout:g}",
        f"--profile {','.join(profiles)}",
    ]
    if args.styles is not None:
        parts.append(f"--styles {','.join(args.styles)}")
    return " ".join(parts)


def _usage_error(args: argparse.Namespace, problem: str, detail: BaseException) -> UsageError:
    # One line, as every command's mistakes are (issue 24); --debug shows the traceback.
    text = " ".join(str(detail).split())
    return UsageError(f"{problem} {args.adapter!r}: {text}")


def run(args: argparse.Namespace) -> int:
    from hypothesis.errors import FlakyFailure

    from ..testing.conformance import (
        PROTOCOL_VERSION,
        ConformanceFailure,
        JsonLinesError,
        JsonLinesProcess,
        check_conformance,
        conformance_plan,
    )

    seed: int = args.seed if args.seed is not None else random.randrange(2**32)
    process = JsonLinesProcess(args.adapter, timeout=args.timeout)
    try:
        process.open()
        declared = process.profiles
        # One empty scenario first: a command that does not speak the protocol is a usage
        # problem, reported once, not a failure to shrink.
        process.request(
            "start",
            protocol=PROTOCOL_VERSION,
            queueLimit=256,
            diagnosticsLimit=256,
            historyLimit=1024,
        )
        process.request("close")
    except (OSError, JsonLinesError) as error:
        process.close()
        raise _usage_error(args, "cannot use the adapter", error) from error
    styles = args.styles if args.styles is not None else _STYLES
    try:
        plan = conformance_plan(process, profiles=_chosen(args, declared), styles=styles)
    except ValueError as error:
        process.close()
        raise _usage_error(args, "cannot check these profiles of the adapter", error) from error
    print(f"workflow-hub conformance: {plan.describe()}")
    print()
    # The profiles asked for, not only those checked: the same plan, the same description.
    reproduce = _reproduce(args, seed, plan.chosen)
    try:
        report = check_conformance(
            process,
            max_examples=args.examples,
            seed=seed,
            max_steps=args.max_steps,
            styles=plan.styles,
            history_limits=plan.history_limits,
            profiles=plan.profiles,
        )
    except ConformanceFailure as failure:
        print(failure)
        print(f"\nReproduce with: {reproduce}")
        return 1
    except FlakyFailure as flaky:
        print(
            "workflow-hub conformance: the adapter is not deterministic: a scenario failed, then "
            "passed when it was played again. The first failure:\n"
        )
        print(flaky.exceptions[0])
        print(f"\nReproduce with: {reproduce}")
        return 1
    finally:
        process.close()
    print(
        f"workflow-hub conformance: {report.examples} scenarios ({report.operations} operations, "
        f"{report.comparisons} comparisons) agree with the reference model, "
        f"for the profiles {', '.join(report.profiles)}."
    )
    print(f"Seed {seed}; adapter: {args.adapter}")
    print(f"Run again with: {reproduce}")
    return 0
