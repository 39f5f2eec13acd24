"""The conformance harness: play scenarios on an adapter and on the reference model, compare.

Every operation is played on both. A publish is checked at once (the cursor it returned, P9);
everything else is checked at every ``settle()`` and at the end: what each observer received and
how many frames it has pending, the snapshot, the diagnostics (kind and cursor) and the hook
events. The first disagreement stops the scenario with a :class:`ConformanceFailure` whose
message is the scenario as a numbered script and the mismatch, expected against actual.

*Epochs.* An implementation picks its own epoch strings, so the harness does not predict them: it
reads the snapshot right after the hub starts and right after every ``register_publisher()``, and
names each epoch it sees ``epoch-0``, ``epoch-1`` … in the order the model starts them. Every
cursor the implementation reports is translated through that table before comparison, and a
cursor with an epoch the table does not know shows up as such in the diff. Reading the snapshot
is all it takes, so hosts that cannot inject epochs are tested the same way.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, TypeVar, cast, final

import attrs
import trio
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from .._contract import Cursor
from .._exceptions import WorkflowHubError
from . import defaults
from ._adapter import (
    AdapterFactory,
    ConformanceAdapter,
    ObserverStyle,
    offers_threads,
    takes_details,
)
from ._operation_strategies import scenarios, thread_scenarios
from ._operations import Scenario, check_playable
from ._profiles import (
    PROFILES,
    THREADS_NOT_OFFERED,
    WITHOUT_SCENARIOS,
    Profile,
    check_profiles,
    declared_profiles,
    describe_profiles,
)
from ._render import render
from .model import HubModel

__all__ = [
    "Checkpoint",
    "ConformanceFailure",
    "ConformancePlan",
    "ConformanceReport",
    "ConformanceSuite",
    "SettleHook",
    "check_conformance",
    "conformance_plan",
    "play_scenario",
]

_T = TypeVar("_T")

_SHOWN = 40  # entries of a sequence shown in a diff


class ConformanceFailure(WorkflowHubError, AssertionError):
    """The implementation disagreed with the reference model.

    ``str(error)`` is the whole report: the scenario, one numbered line per operation, the step
    where it went wrong, and the first mismatch with expected and actual values.
    """

    def __init__(self, message: str, *, scenario: Scenario, step: int) -> None:
        super().__init__(message)
        self.scenario = scenario
        """The scenario that failed (after shrinking, when raised by ``check_conformance``)."""
        self.step = step
        """The 1-based step where the disagreement showed; 0 is the start, len+1 the end."""
        self.profiles: tuple[Profile, ...] = PROFILES
        """The profiles the run checked (set by ``check_conformance``)."""


@final
@attrs.frozen(kw_only=True)
class ConformanceReport:
    """What a passing ``check_conformance`` run did."""

    examples: int
    """Scenarios played (of the threads profile not included: see :attr:`thread_examples`)."""
    operations: int
    """Operations played, over all scenarios."""
    comparisons: int
    """Times the whole observable state was compared with the model."""
    profiles: tuple[Profile, ...] = PROFILES
    """The profiles checked (see :data:`~workflow_hub.testing.conformance.PROFILES`)."""
    thread_examples: int = 0
    """Thread scenarios played (bursts of publishes from OS threads), when ``threads`` was
    checked: as many as :attr:`examples`, after them."""


@final
@attrs.frozen(kw_only=True)
class Checkpoint:
    """What a :data:`SettleHook` sees: the model and the adapter, both settled and agreeing."""

    model: HubModel
    """The reference model, settled."""
    adapter: ConformanceAdapter
    """The adapter under test, settled (for :class:`HubAdapter`, ``adapter.hub`` is the hub)."""
    scenario: Scenario
    """The scenario being played."""
    step: int
    """The 1-based step of the settle; ``len(scenario.operations) + 1`` for the final one."""

    @property
    def final(self) -> bool:
        """Whether this is the end: every observer released and settled."""
        return self.step > len(self.scenario.operations)


SettleHook = Callable[[Checkpoint], Awaitable[None]]
"""Extra invariants, checked after every settle once the implementation agreed with the model.

An exception it raises fails the scenario like a disagreement: the report names the step and
shows the scenario, and hypothesis shrinks it. The project's own property tests are such hooks.
"""


@final
@attrs.frozen
class _Mismatch:
    what: str
    detail: str


def _epoch_names() -> Iterator[str]:
    return (f"epoch-{index}" for index in itertools.count())


def _sequence_lines(label: str, values: Sequence[object]) -> list[str]:
    lines = [f"  {label} ({len(values)}):"]
    lines.extend(f"    {index}. {render(value)}" for index, value in enumerate(values[:_SHOWN]))
    if len(values) > _SHOWN:
        lines.append(f"    … {len(values) - _SHOWN} more")
    return lines


def _pair(expected: object, actual: object) -> list[str]:
    shown_expected, shown_actual = render(expected), render(actual)
    if shown_expected == shown_actual:
        # Alike in summary, different in detail: show everything.
        shown_expected, shown_actual = repr(expected), repr(actual)
    return [f"  expected: {shown_expected}", f"  actual:   {shown_actual}"]


def _as_double(number: int | float) -> int | float:
    try:
        return float(number)
    except OverflowError:  # an int beyond every double: only exact equality can match it
        return number


def same(expected: object, actual: object) -> bool:
    """``expected == actual``, except that numbers compare by their value as IEEE doubles.

    Every value an adapter reports crossed JSON, and most JSON implementations hold a number as
    a double and write it back in its shortest form: JavaScript reads ``2.167957083685233e+16``
    and writes ``21679570836852330``, an int here that is not ``==`` the float. Both denote the
    same double, which is all JSON promises a host (RFC 8259, section 6), so the kit accepts it.
    """
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        if isinstance(expected, bool) or isinstance(actual, bool):
            return expected is actual
        return _as_double(expected) == _as_double(actual)
    if type(expected) is not type(actual):
        return expected == actual
    cls: Any = type(expected)
    if attrs.has(cls):
        return all(
            same(getattr(expected, field.name), getattr(actual, field.name))
            for field in attrs.fields(cls)
        )
    if isinstance(expected, tuple | list):
        assert isinstance(actual, tuple | list)
        return len(expected) == len(actual) and all(map(same, expected, actual))
    return expected == actual


def _compare_sequences(
    what: str, expected: Sequence[object], actual: Sequence[object]
) -> _Mismatch | None:
    if same(list(expected), list(actual)):
        return None
    position = next(
        (
            index
            for index, (left, right) in enumerate(zip(expected, actual, strict=False))
            if not same(left, right)
        ),
        min(len(expected), len(actual)),
    )
    lines = [f"{what}, first difference at position {position}:"]
    if position < len(expected) and position < len(actual):
        lines.extend(_pair(expected[position], actual[position]))
    elif position < len(expected):
        lines += [f"  expected: {render(expected[position])}", "  actual:   (nothing more)"]
    else:
        lines += ["  expected: (nothing more)", f"  actual:   {render(actual[position])}"]
    lines += _sequence_lines("expected", expected) + _sequence_lines("actual", actual)
    return _Mismatch(what, "\n".join(lines))


def _compare_values(what: str, expected: object, actual: object) -> _Mismatch | None:
    if same(expected, actual):
        return None
    return _Mismatch(what, "\n".join([f"{what}:", *_pair(expected, actual)]))


@final
class _Player:
    """Plays one scenario on one adapter and on the model, in step."""

    def __init__(
        self,
        scenario: Scenario,
        adapter_factory: AdapterFactory,
        on_settle: SettleHook | None = None,
    ) -> None:
        check_playable(scenario.operations)
        self.scenario = scenario
        self.factory = adapter_factory
        self.on_settle = on_settle
        config = scenario.config
        self._model = HubModel(
            _epoch_names(),
            queue_limit=config.queue_limit,
            diagnostics_limit=config.diagnostics_limit,
            history_limit=config.history_limit,
        )
        self._adapter: ConformanceAdapter | None = None
        self.epochs: dict[str, str] = {}
        """Implementation epoch -> model epoch name."""
        self.step = 0
        self.comparisons = 0

    # --- reporting ----------------------------------------------------------------------------

    def where(self) -> str:
        operations = self.scenario.operations
        if self.step == 0:
            return "at the start (a fresh hub)"
        if self.step > len(operations):
            return "at the end (every observer released, settled)"
        return f"after step {self.step} ({operations[self.step - 1].describe()})"

    def error(
        self, headline: str, detail: str = "", also: Sequence[str] = ()
    ) -> ConformanceFailure:
        lines = [
            f"workflow-hub conformance: {headline}, {self.where()}.",
            "",
            self._script(),
        ]
        if detail:
            lines += ["", detail]
        if also:
            lines += ["", "Also differing at this point: " + ", ".join(also) + "."]
        if self.epochs:
            table = ", ".join(f"{name} is {actual!r}" for actual, name in self.epochs.items())
            lines += ["", f"Epochs (implementation strings): {table}."]
        return ConformanceFailure("\n".join(lines), scenario=self.scenario, step=self.step)

    def _script(self) -> str:
        lines = self.scenario.describe().splitlines()
        # Line 0 is the heading, line n is step n; the last line is the implicit end.
        marked = min(self.step, len(lines) - 1)
        if marked > 0:
            lines[marked] += "   <-- here"
        return "\n".join(lines)

    # --- what operations play on (the Player protocol) -------------------------------------------

    @property
    def model(self) -> HubModel:
        return self._model

    @property
    def adapter(self) -> ConformanceAdapter:
        assert self._adapter is not None
        return self._adapter

    def check_value(self, what: str, expected: object, actual: object) -> None:
        mismatch = _compare_values(what, expected, actual)
        if mismatch is not None:
            raise self.error(f"mismatch in {what}", mismatch.detail)

    def implementation_cursor(self, cursor: Cursor) -> Cursor:
        for actual, name in self.epochs.items():
            if name == cursor.epoch:
                return Cursor(epoch=actual, revision=cursor.revision)
        # An epoch the scenario has not started: no implementation may have used this string.
        return Cursor(epoch=f"never-used-{cursor.epoch}", revision=cursor.revision)

    # --- epochs ---------------------------------------------------------------------------------

    def _cursor(self, cursor: Cursor) -> Cursor:
        name = self.epochs.get(cursor.epoch)
        if name is None:
            name = f"<unknown epoch {cursor.epoch!r}>"
        return Cursor(epoch=name, revision=cursor.revision)

    def translate(self, value: _T) -> _T:
        cursor = getattr(value, "cursor", None)
        if isinstance(cursor, Cursor):
            return cast(_T, attrs.evolve(cast(Any, value), cursor=self._cursor(cursor)))
        return value

    async def learn_epoch(self, *, fresh: bool) -> None:
        epoch = (await self.adapter.snapshot()).cursor.epoch
        known = self.epochs.get(epoch)
        if fresh:
            if known is not None:
                raise self.error(
                    "a new epoch was expected (P1)",
                    f"the hub's epoch is {epoch!r}, which was already used as {known}",
                )
            self.epochs[epoch] = self.model.epoch
        elif known != self.model.epoch:
            raise self.error(
                "the epoch changed where it must not",
                f"expected {self.model.epoch}, the hub's epoch is {epoch!r} ({known or 'new'})",
            )

    # --- playing ------------------------------------------------------------------------------

    async def play(self, time_limit: float) -> None:
        try:
            with trio.fail_after(time_limit):
                await self._play()
        except trio.TooSlowError:
            raise self.error(f"the scenario did not finish within {time_limit} s") from None

    async def _play(self) -> None:
        try:
            adapter = self._adapter = self.factory(self.scenario.config)
        except Exception as error:
            raise self._raised(error) from error
        try:
            await self._guarded(adapter.start)
            await self._guarded(lambda: self.learn_epoch(fresh=True))
            await self._guarded(self.compare)
            for step, operation in enumerate(self.scenario.operations, 1):
                self.step = step
                await self._guarded(functools.partial(operation.play, self))
            self.step = len(self.scenario.operations) + 1
            await self._guarded(self.finish)
        except BaseException:
            # The failure being raised is the news; a close that fails as well is not.
            with contextlib.suppress(Exception):
                await adapter.close()
            raise
        await self._guarded(adapter.close)

    def _raised(self, error: Exception) -> ConformanceFailure:
        first, _, rest = str(error).partition("\n")
        return self.error(f"the adapter raised {type(error).__name__}: {first}", rest)

    async def _guarded(self, call: Callable[[], Awaitable[object]]) -> None:
        try:
            await call()
        except ConformanceFailure:
            raise
        except Exception as error:
            raise self._raised(error) from error

    def check_cursor(self, expected: Cursor | None, actual: Cursor | None) -> None:
        translated = None if actual is None else self._cursor(actual)
        if not same(expected, translated):
            shown_expected = "None (fenced)" if expected is None else render(expected)
            shown_actual = "None (fenced)" if translated is None else render(translated)
            raise self.error(
                "the publish returned the wrong cursor (P9)",
                f"cursor returned:\n  expected: {shown_expected}\n  actual:   {shown_actual}",
            )

    async def finish(self) -> None:
        for observer in range(len(self.model.observers)):
            self.model.release(observer)
            await self.adapter.release(observer)
        await self.compare()

    async def compare(self) -> None:
        """Settle both, compare everything observable (fail on the first difference), then
        check the settle hook's invariants."""
        self.comparisons += 1
        model = self.model
        adapter = self.adapter
        await adapter.settle()
        model.settle()
        mismatches: list[_Mismatch | None] = [
            _compare_values(
                "the snapshot (L3)", model.snapshot(), self.translate(await adapter.snapshot())
            )
        ]
        for index, expected in enumerate(model.observers):
            frames = [self.translate(frame) for frame in await adapter.frames(index)]
            mismatches.append(
                _compare_sequences(f"the frames of observer#{index}", expected.received, frames)
            )
            mismatches.append(
                _compare_values(
                    f"the pending count of observer#{index} (O4)",
                    len(expected.pending),
                    await adapter.pending(index),
                )
            )
        diagnostics = [self.translate(item) for item in await adapter.diagnostics()]
        mismatches.append(
            _compare_sequences("the diagnostics (L3)", model.diagnostics, diagnostics)
        )
        events = [self.translate(event) for event in await adapter.hook_events()]
        mismatches.append(_compare_sequences("the hook events (K1)", model.hook_events, events))
        found = [mismatch for mismatch in mismatches if mismatch is not None]
        if found:
            first, *rest = found
            raise self.error(
                f"mismatch in {first.what}",
                first.detail,
                [mismatch.what for mismatch in rest],
            )
        if self.on_settle is not None and self.step > 0:
            checkpoint = Checkpoint(
                model=model, adapter=adapter, scenario=self.scenario, step=self.step
            )
            try:
                await self.on_settle(checkpoint)
            except Exception as error:
                first_line, _, rest_lines = str(error).partition("\n")
                raise self.error(
                    f"an invariant failed ({type(error).__name__}: {first_line})", rest_lines
                ) from error

    @property
    def operations_played(self) -> int:
        return min(self.step, len(self.scenario.operations))


def _refuse_inside_trio() -> None:
    if trio.lowlevel.in_trio_run():
        raise RuntimeError(
            "the conformance harness runs each scenario with trio.run(); call it from "
            "synchronous code (in a pytest-trio project, a plain `def` test)"
        )


async def _play(
    scenario: Scenario,
    adapter_factory: AdapterFactory,
    time_limit: float,
    on_settle: SettleHook | None = None,
) -> _Player:
    player = _Player(scenario, adapter_factory, on_settle)
    await player.play(time_limit)
    return player


def play_scenario(
    adapter_factory: AdapterFactory,
    scenario: Scenario,
    *,
    timeout: float = defaults.TIMEOUT,
    on_settle: SettleHook | None = None,
) -> None:
    """Play one scenario on a fresh adapter and on the model; raise :class:`ConformanceFailure`.

    Useful to replay a scenario a failure printed, as a regression test, and as the body of a
    property test that draws :func:`scenarios` and checks invariants of its own in ``on_settle``
    (after every settle and at the end). Each scenario runs in its own ``trio.run``, bounded by
    ``timeout`` seconds.
    """
    _refuse_inside_trio()
    trio.run(_play, scenario, adapter_factory, timeout, on_settle)


@final
@attrs.frozen(kw_only=True)
class ConformancePlan:
    """What a run checks: the profiles, and the options that follow from them."""

    profiles: tuple[Profile, ...]
    """The profiles checked: what the adapter declared (or the subset asked for), less any the
    options leave unchecked (no ``stream`` style, or only a zero history limit) and ``threads``
    when the adapter offers no thread entry point (every JSON-lines adapter)."""
    history_limits: tuple[int, ...]
    styles: tuple[ObserverStyle, ...]
    declared: tuple[Profile, ...] = PROFILES
    """What the adapter declared."""
    chosen: tuple[Profile, ...] = PROFILES
    """The profiles asked for (before the options and the kit narrowed them)."""

    @property
    def resume(self) -> bool:
        return "resume" in self.profiles

    @property
    def threads(self) -> bool:
        return "threads" in self.profiles

    def describe(self) -> str:
        """The profiles, checked or not, one a line, with their requirement ids."""
        unchecked: dict[Profile, str] = {}
        if "threads" in self.chosen and not self.threads:
            unchecked["threads"] = THREADS_NOT_OFFERED
        return "Profiles checked:\n" + describe_profiles(self.profiles, self.chosen, unchecked)


def conformance_plan(
    adapter_factory: object,
    *,
    profiles: Sequence[str] | None = None,
    history_limits: Sequence[int] = defaults.HISTORY_LIMITS,
    styles: Sequence[ObserverStyle] = defaults.STYLES,
) -> ConformancePlan:
    """The profiles a run checks and the options it runs with.

    ``profiles`` defaults to what the adapter declares (:func:`declared_profiles`: every profile
    when it declares nothing); naming a profile it does not declare is a ``ValueError``. Without
    ``resume`` the history limit is 0 and no observer resumes; without ``stream`` only callback
    observers attach. ``history_limits`` and ``styles`` narrow further, and the plan says so: a
    run with only a zero history limit does not check ``resume``, one without the stream style
    does not check ``stream``, and an adapter factory without the thread entry point
    (:func:`~workflow_hub.testing.conformance.offers_threads`) does not check ``threads``.
    """
    declared = declared_profiles(adapter_factory)
    if profiles is None:
        chosen = declared
    else:
        asked = list(profiles) if not isinstance(profiles, str | bytes) else [profiles]
        # What the adapter does not declare is the first thing to say (a user who asked for
        # `resume` alone learns that as well as that `source` is required).
        undeclared = [p for p in PROFILES if p in asked and p not in declared]
        chosen = check_profiles(profiles) if not undeclared else ()
        if undeclared:
            raise ValueError(
                f"profiles: the adapter does not declare {', '.join(undeclared)} "
                f"(it declares {', '.join(declared)})"
            )
    limits = tuple(history_limits)
    chosen_styles = tuple(styles)
    if "stream" not in chosen:
        chosen_styles = tuple(style for style in chosen_styles if style != "stream")
    if not chosen_styles:
        raise ValueError(
            "styles: no observer style is left to check"
            + ("" if "stream" in chosen else " (stream observers need the stream profile)")
        )
    if "resume" not in chosen:
        limits = (0,)
    checked = tuple(
        profile
        for profile in chosen
        if profile not in WITHOUT_SCENARIOS
        and not (profile == "resume" and not any(limits))
        and not (profile == "stream" and "stream" not in chosen_styles)
        and not (profile == "threads" and not offers_threads(adapter_factory))
    )
    return ConformancePlan(
        profiles=checked,
        history_limits=limits,
        styles=chosen_styles,
        declared=declared,
        chosen=chosen,
    )


def check_conformance(
    adapter_factory: AdapterFactory,
    *,
    max_examples: int = defaults.EXAMPLES,
    seed: int | None = None,
    max_steps: int = defaults.MAX_STEPS,
    queue_limits: Sequence[int] = defaults.QUEUE_LIMITS,
    diagnostics_limits: Sequence[int] = defaults.DIAGNOSTICS_LIMITS,
    history_limits: Sequence[int] = defaults.HISTORY_LIMITS,
    styles: Sequence[ObserverStyle] = defaults.STYLES,
    timeout: float = defaults.TIMEOUT,
    profiles: Sequence[str] | None = None,
) -> ConformanceReport:
    """Check an implementation against the reference model with generated scenarios.

    ``adapter_factory(config)`` makes a fresh adapter for each scenario. Hypothesis draws
    ``max_examples`` scenarios of up to ``max_steps`` operations (``seed`` makes the run
    reproducible); on a disagreement it shrinks the scenario and this raises a
    :class:`ConformanceFailure` describing the *shrunk* one. ``queue_limits`` and
    ``diagnostics_limits`` are the configurations tried (small ones reach overflow and make the
    diagnostics ring wrap; small history limits put resumes on both sides of the history's edge);
    ``styles`` the observer styles the adapter supports. Each scenario is
    bounded by ``timeout`` seconds.

    ``profiles`` are the parts of the contract checked (see :func:`conformance_plan`): by
    default what the adapter declares in its ``profiles`` attribute, every profile when it
    declares nothing. The report (and a failure's message) says which were checked. With
    ``threads`` checked, as many thread scenarios follow (bursts of publishes from OS threads,
    see :class:`~workflow_hub.testing.conformance.ThreadsAdapter`), drawn with the same seed.

    Must be called from synchronous code: each scenario runs in its own ``trio.run``.
    """
    _refuse_inside_trio()
    plan = conformance_plan(
        adapter_factory, profiles=profiles, history_limits=history_limits, styles=styles
    )
    played = {"examples": 0, "operations": 0, "comparisons": 0, "thread_examples": 0}

    run_settings = settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        print_blob=False,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
    )

    def play(scenario: Scenario, counter: str = "examples") -> None:
        # The failure message is built here, from the scenario being played, so the exception
        # hypothesis finally raises describes the shrunk scenario.
        player = trio.run(_play, scenario, adapter_factory, timeout)
        played[counter] += 1
        played["operations"] += player.operations_played
        played["comparisons"] += player.comparisons

    details = takes_details(adapter_factory)

    @run_settings
    @given(
        scenarios(
            max_steps=max_steps,
            queue_limits=queue_limits,
            diagnostics_limits=diagnostics_limits,
            history_limits=plan.history_limits,
            styles=plan.styles,
            resume=plan.resume,
            details=details,
        )
    )
    def conformance(scenario: Scenario) -> None:
        play(scenario)

    @run_settings
    @given(
        thread_scenarios(
            max_steps=max_steps,
            diagnostics_limits=diagnostics_limits,
            history_limits=plan.history_limits,
            styles=plan.styles,
            resume=plan.resume,
            details=details,
        )
    )
    def threads(scenario: Scenario) -> None:
        play(scenario, "thread_examples")

    # pytest hides frames that set this: the failure's message is the report, our frames noise.
    __tracebackhide__ = True
    tests = [conformance, threads] if plan.threads else [conformance]
    try:
        for test in tests:
            (test if seed is None else hypothesis_seed(seed)(test))()
    except ConformanceFailure as error:
        failure = error
    else:
        return ConformanceReport(**played, profiles=plan.profiles)
    # Hypothesis notes the failing example's repr; the message already is its readable form.
    notes = [note for note in getattr(failure, "__notes__", ()) if not _is_example_note(note)]
    failure.__notes__ = notes
    failure.profiles = plan.profiles
    failure.args = (f"{failure.args[0]}\n\n{plan.describe()}", *failure.args[1:])
    raise failure.with_traceback(None)


def _is_example_note(note: object) -> bool:
    return isinstance(note, str) and note.startswith(("Falsifying example", "Failing test case"))


@final
@attrs.define(kw_only=True)
class ConformanceSuite:
    """The suite bound to one adapter factory: what the ``workflow_hub_conformance`` fixture gives.

    The pytest plugin runs it before the body of a test that requests the fixture, so a
    disagreement fails that test; the body may then look at :attr:`report`.
    """

    adapter_factory: AdapterFactory
    max_examples: int = defaults.EXAMPLES
    seed: int | None = None
    max_steps: int = defaults.MAX_STEPS
    queue_limits: Sequence[int] = defaults.QUEUE_LIMITS
    diagnostics_limits: Sequence[int] = defaults.DIAGNOSTICS_LIMITS
    history_limits: Sequence[int] = defaults.HISTORY_LIMITS
    styles: Sequence[ObserverStyle] = defaults.STYLES
    timeout: float = defaults.TIMEOUT
    profiles: Sequence[str] | None = None
    """The profiles to check; by default what the adapter declares (every one if it is silent)."""
    report: ConformanceReport | None = None
    """Set once :meth:`run` has passed."""

    def run(self) -> ConformanceReport:
        """Run the suite (once; later calls return the same report)."""
        __tracebackhide__ = True
        if self.report is None:
            self.report = check_conformance(
                self.adapter_factory,
                max_examples=self.max_examples,
                seed=self.seed,
                max_steps=self.max_steps,
                queue_limits=self.queue_limits,
                diagnostics_limits=self.diagnostics_limits,
                history_limits=self.history_limits,
                styles=self.styles,
                timeout=self.timeout,
                profiles=self.profiles,
            )
        return self.report
