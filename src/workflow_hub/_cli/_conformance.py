"""``workflow-hub conformance``: check an external process against the reference model.

The process speaks the JSON-lines adapter protocol (``docs/conformance.md``). Exit status: 0 when
every scenario agrees with the model, 1 on a disagreement (the shrunk scenario is printed), 2 when
the adapter cannot be started or does not speak the protocol. Hypothesis is imported by ``run``
only, so that other subcommands never load it.
"""

from __future__ import annotations

import argparse
import random
import shlex
import sys

__all__ = ["add_arguments", "run"]

from ..testing import defaults

_STYLES = defaults.STYLES


def _styles(text: str) -> tuple[str, ...]:
    styles = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [style for style in styles if style not in _STYLES]
    if not styles or unknown:
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of {' and '.join(_STYLES)}, got {text!r}"
        )
    return styles


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
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
        "--styles",
        type=_styles,
        default=_STYLES,
        metavar="STYLES",
        help="observer styles the adapter supports: callback,stream (default: both)",
    )
    parser.add_argument(
        "--timeout",
        type=_positive_float,
        default=10.0,
        metavar="SECONDS",
        help="how long to wait for each answer of the adapter, start-up aside (default: 10)",
    )


def _reproduce(args: argparse.Namespace, seed: int) -> str:
    return (
        f"workflow-hub conformance --adapter {shlex.quote(args.adapter)} "
        f"--examples {args.examples} --seed {seed}"
    )


def run(args: argparse.Namespace) -> int:
    from hypothesis.errors import FlakyFailure

    from ..testing.conformance import (
        PROTOCOL_VERSION,
        ConformanceFailure,
        JsonLinesError,
        JsonLinesProcess,
        check_conformance,
    )

    seed: int = args.seed if args.seed is not None else random.randrange(2**32)
    process = JsonLinesProcess(args.adapter, timeout=args.timeout)
    try:
        process.open()
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
        detail = " ".join(str(error).split())
        print(
            f"workflow-hub conformance: cannot use the adapter {args.adapter!r}: {detail}",
            file=sys.stderr,
        )
        return 2
    try:
        report = check_conformance(
            process,
            max_examples=args.examples,
            seed=seed,
            max_steps=args.max_steps,
            styles=args.styles,
        )
    except ConformanceFailure as failure:
        print(failure)
        print(f"\nReproduce with: {_reproduce(args, seed)}")
        return 1
    except FlakyFailure as flaky:
        print(
            "workflow-hub conformance: the adapter is not deterministic: a scenario failed, then "
            "passed when it was played again. The first failure:\n"
        )
        print(flaky.exceptions[0])
        print(f"\nReproduce with: {_reproduce(args, seed)}")
        return 1
    finally:
        process.close()
    print(
        f"workflow-hub conformance: {report.examples} scenarios ({report.operations} operations, "
        f"{report.comparisons} comparisons) agree with the reference model."
    )
    print(f"Seed {seed}; adapter: {args.adapter}")
    return 0
