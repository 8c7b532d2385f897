from datetime import UTC, datetime, timedelta

from gitgate.loop.schedule import (
    STANDBY_CHECK,
    LoopState,
    backoff,
    next_wake,
    pass_reason,
    wait_seconds,
)

T0 = datetime(2026, 11, 18, 12, tzinfo=UTC)
RESYNC = timedelta(minutes=10)


def test_pass_reasons_in_order_of_priority():
    state = LoopState(revision="a", last_pass=T0, next_transition=T0 + timedelta(minutes=5))
    assert pass_reason(state, "a", T0 + timedelta(minutes=1), RESYNC) is None
    assert pass_reason(state, "b", T0 + timedelta(minutes=1), RESYNC) == "revision"
    assert pass_reason(state, "a", T0 + timedelta(minutes=5), RESYNC) == "gate-transition"
    state.next_transition = None
    assert pass_reason(state, "a", T0 + RESYNC, RESYNC) == "resync"
    state.retry_at = T0 + timedelta(seconds=30)
    assert pass_reason(state, "b", T0 + timedelta(seconds=10), RESYNC) is None
    assert pass_reason(state, "b", T0 + timedelta(seconds=30), RESYNC) == "retry"


def test_wake_up_for_transitions_and_retries_before_the_interval():
    state = LoopState(next_transition=T0 + timedelta(seconds=20))
    assert next_wake(state, T0, timedelta(minutes=1)) == T0 + timedelta(seconds=20)
    state.retry_at = T0 + timedelta(seconds=5)
    assert next_wake(state, T0, timedelta(minutes=1)) == T0 + timedelta(seconds=5)
    assert next_wake(LoopState(), T0, timedelta(minutes=1)) == T0 + timedelta(minutes=1)


def test_backoff_doubles_and_is_capped():
    base, cap = timedelta(seconds=5), timedelta(minutes=5)
    assert [backoff(n, base, cap).total_seconds() for n in (1, 2, 3, 4, 10)] == [
        5, 10, 20, 40, 300]


def test_a_replica_that_became_leader_during_its_turn_does_not_wait_an_interval():
    """Issue 28, item 5: `standing by` at 18:14:10, `became leader` at 18:15:10 with the
    default 1m interval: the turn was planned as a standby's, but the wait was a leader's."""
    interval_away = T0 + timedelta(minutes=1)
    assert wait_seconds(interval_away, T0, was_leading=False, leading=True) == STANDBY_CHECK
    assert wait_seconds(interval_away, T0, was_leading=False, leading=False) == STANDBY_CHECK
    assert wait_seconds(interval_away, T0, was_leading=True, leading=False) == STANDBY_CHECK
    assert wait_seconds(interval_away, T0, was_leading=True, leading=True) == 60.0
    assert wait_seconds(T0, T0, was_leading=True, leading=True) == 0.05  # never a busy loop


def _plan(elsewhere: set[str], **needs: tuple[str, ...]):
    from dataclasses import replace

    from gitgate.model import BundleOptions, Verdict
    from gitgate.model.verdict import BundleVerdict
    from gitgate.plan import BundlePlan, Plan
    from tests.support.objects import bundle, source

    items = []
    for name, deps in needs.items():
        made = bundle(name, src=replace(source(name, name=name),
                                        options=BundleOptions(depends_on=deps)))
        items.append(BundlePlan(made, BundleVerdict(name, Verdict.APPLY, ""), (), ()))
    return Plan("r", T0, tuple(items), (), (), (), elsewhere=frozenset(elsewhere))


def _result(*failed: tuple[str, str]):
    from gitgate.apply.work import BundleResult, PassResult

    results = []
    for name, reason in failed:
        result = BundleResult(name, "apply")
        result.fail(reason, "why")
        results.append(result)
    return PassResult("r", [*results, BundleResult("ok", "apply")])


def test_waiting_for_another_shards_dependency_is_not_a_failure_to_back_off_from():
    from gitgate.errors import Reason
    from gitgate.loop.schedule import waits_elsewhere

    plan = _plan({"ns"}, web=("ns",), api=("web",), ok=())
    waiting = Reason.DEPENDENCY_NOT_READY
    assert waits_elsewhere(plan, _result(("web", waiting), ("api", waiting)))
    assert not waits_elsewhere(plan, _result(("web", waiting), ("api", Reason.APPLY_FAILED)))
    assert not waits_elsewhere(plan, _result())  # nothing failed
    # a typo names a bundle nobody has: a mistake, backed off from
    typo = _plan({"ns"}, web=("ns", "nss"), ok=())
    assert not waits_elsewhere(typo, _result(("web", waiting)))
    # without shards (nothing elsewhere) a dependency failure is a failure
    assert not waits_elsewhere(_plan(set(), web=("ns",), ok=()), _result(("web", waiting)))
