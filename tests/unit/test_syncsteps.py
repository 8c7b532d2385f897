"""The sync of a bundle with hooks, one pass at a time: which objects each pass writes and
keeps, when a step is done, failed or timed out, and what a new digest does to the previous
run. Plain data, explicit clock."""

from datetime import UTC, datetime, timedelta

from gitgate.karmada.syncsteps import HookState, Progress, hook_step, sync_plan
from gitgate.model import ObjectRef
from gitgate.model.hookmarks import Phase

T0 = datetime(2026, 11, 23, 12, tzinfo=UTC)
TIMEOUT = timedelta(minutes=10)


def obj(kind, name, api="v1", **annotations):
    return {"apiVersion": api, "kind": kind,
            "metadata": {"name": name, "namespace": "shop", "annotations": annotations}}


def job(name, **annotations):
    return obj("Job", name, "batch/v1", **annotations)


def ref(o):
    return ObjectRef.of(o)


NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
MIGRATE = job("migrate-1a2b3c4d", **{"helm.sh/hook": "pre-install,pre-upgrade",
                                     "helm.sh/hook-weight": "-2"})
BANNER = job("banner-on", **{"helm.sh/hook": "pre-install", "helm.sh/hook-weight": "-1",
                             "helm.sh/hook-delete-policy": "hook-succeeded"})
WEB = obj("Deployment", "web", "apps/v1")
SVC = obj("Service", "web", **{"helm.sh/hook-weight": "2"})  # a weight without a hook: wave 0
NOTIFY = job("notify", **{"argocd.argoproj.io/hook": "PostSync"})
ROLLBACK = job("undo", **{"argocd.argoproj.io/hook": "SyncFail"})
OBJECTS = [NS, MIGRATE, BANNER, WEB, SVC, NOTIFY, ROLLBACK]
PLAN = sync_plan(OBJECTS)
DONE = Progress(done=True)


def step(previous, present=(), progress=None, now=T0, digest="d2", applied="d1", **kw):
    return hook_step(PLAN, previous, applied, digest, frozenset(ref(o) for o in present),
                     progress or {}, now, TIMEOUT, **kw)


def names(refs):
    return sorted(r.name for r in refs)


def test_steps_run_pre_sync_by_weight_then_templates_then_post_sync():
    assert [(s.phase, s.wave, names(s.hooks), names(s.templates)) for s in PLAN.steps] == [
        (Phase.PRE_SYNC, -2, ["migrate-1a2b3c4d"], []),
        (Phase.PRE_SYNC, -1, ["banner-on"], []),
        (Phase.SYNC, 0, [], ["web", "web"]),
        (Phase.POST_SYNC, 0, ["notify"], []),
    ]
    assert PLAN.always == (ref(NS),) and PLAN.on_fail == (ref(ROLLBACK),)
    assert not sync_plan([WEB, SVC]).has_hooks


def test_a_new_digest_writes_the_first_pre_sync_hook_and_keeps_the_old_templates():
    old = [NS, WEB, SVC]
    first = step(None, old)
    assert names(first.write) == ["migrate-1a2b3c4d", "shop"]
    assert names(first.keep) == ["web", "web"]  # old templates stay as they are
    assert first.state.step == 0 and first.next_check == T0 + timedelta(seconds=5)
    assert "written, waiting" in first.waiting_for


def test_each_step_waits_for_the_one_before_and_moves_on_in_the_same_pass():
    old = [NS, WEB, SVC]
    first = step(None, old).state
    later = T0 + timedelta(seconds=5)
    waiting = step(first, [*old, MIGRATE], {ref(MIGRATE): Progress(
        waiting="Job.batch shop/migrate-1a2b3c4d on member2 has not completed")}, later)
    assert waiting.state.step == 0 and waiting.write == frozenset({ref(NS)})
    assert "member2 has not completed" in waiting.waiting_for
    moved = step(first, [*old, MIGRATE], {ref(MIGRATE): DONE}, later)
    assert moved.state.step == 1 and moved.state.started == later
    assert names(moved.write) == ["banner-on", "shop"]
    assert names(moved.keep) == ["migrate-1a2b3c4d", "web", "web"]
    # banner-on done (HookSucceeded: deleted) -> the templates are written
    third = step(moved.state, [*old, MIGRATE, BANNER], {ref(MIGRATE): DONE, ref(BANNER): DONE},
                 later + timedelta(seconds=5))
    assert third.state.step == 2
    assert names(third.write) == ["shop", "web", "web"]
    assert names(third.keep) == ["migrate-1a2b3c4d"]  # banner-on is pruned: it succeeded


def test_post_sync_runs_once_the_templates_are_ready_and_then_the_sync_is_done():
    state = HookState("d2", 2, T0)
    present = [NS, WEB, SVC, MIGRATE]
    ready = {ref(WEB): DONE, ref(SVC): DONE}
    post = step(state, present, ready, T0 + timedelta(seconds=5))
    assert post.state.step == 3 and names(post.write) == ["notify", "shop", "web", "web"]
    done = step(post.state, [*present, NOTIFY], {**ready, ref(NOTIFY): DONE},
                T0 + timedelta(seconds=10))
    assert done.done(len(PLAN.steps)) and done.next_check is None
    assert names(done.write) == ["shop", "web", "web"]
    assert names(done.keep) == ["migrate-1a2b3c4d", "notify"]  # never sent again


def test_a_failed_pre_sync_hook_stops_the_sync_before_the_templates():
    first = step(None, [NS, WEB]).state
    failed = step(first, [NS, WEB, MIGRATE], {ref(MIGRATE): Progress(
        failed="Job.batch shop/migrate-1a2b3c4d failed on member1 (BackoffLimitExceeded)")},
        T0 + timedelta(seconds=5))
    assert "member1" in failed.failed and "BackoffLimitExceeded" in failed.failed
    assert ref(WEB) in failed.keep and ref(WEB) not in failed.write
    assert ref(ROLLBACK) in failed.write  # SyncFail hooks run
    again = step(failed.state, [NS, WEB, MIGRATE, ROLLBACK], {}, T0 + timedelta(minutes=1))
    assert again.failed == failed.failed and ref(ROLLBACK) in again.keep
    assert ref(WEB) not in again.write


def test_a_step_not_done_within_the_timeout_fails():
    first = step(None, [NS, WEB]).state
    late = step(first, [NS, WEB, MIGRATE], {ref(MIGRATE): Progress(waiting="not applied yet")},
                T0 + TIMEOUT)
    assert "not done within the hook timeout 600s: not applied yet" in late.failed


def test_the_previous_run_is_deleted_and_a_fixed_name_hook_is_deleted_before_it_runs_again():
    earlier = HookState("d1", 4, T0 - timedelta(hours=1),
                        hooks=("batch|Job|shop|migrate-00000000", "batch|Job|shop|banner-on"))
    old_run = job("migrate-00000000")
    present = [NS, WEB, SVC, old_run, BANNER]
    first = step(earlier, present)
    assert first.state.cleaning
    assert ref(old_run) not in first.keep | first.write  # pruned
    assert ref(BANNER) not in first.keep | first.write  # deleted before it runs again
    assert ref(MIGRATE) not in first.write  # nothing runs while the old run goes
    second = step(first.state, [NS, WEB, SVC], {}, T0 + timedelta(seconds=5))
    assert not second.state.cleaning and ref(MIGRATE) in second.write


def test_unchanged_content_runs_no_hook_and_a_gate_stops_the_clock():
    adopted = step(None, [NS, WEB, SVC], digest="d1", applied="d1")
    assert adopted.done(len(PLAN.steps)) and not (adopted.write & {ref(MIGRATE), ref(BANNER)})
    first = step(None, [NS, WEB]).state
    gated = step(first, [NS, WEB, MIGRATE], {}, T0 + TIMEOUT, gated=True)
    assert gated.state.step == 0 and not gated.failed and gated.state.started == T0 + TIMEOUT


def test_a_state_that_cannot_be_read_starts_the_sync_again():
    assert HookState.from_json("{not json") is None
    state = HookState("d2", 1, T0, "", ("batch|Job|shop|x",), True)
    assert HookState.from_json(state.to_json()) == state


def test_templates_only_last_step_is_done_when_written():
    plan = sync_plan([MIGRATE, WEB])
    state = HookState("d2", 0, T0)
    done = hook_step(plan, state, "d1", "d2", frozenset({ref(MIGRATE), ref(WEB)}),
                     {ref(MIGRATE): DONE}, T0 + timedelta(seconds=5), TIMEOUT)
    assert done.state.step == 2 and done.next_check is None and ref(WEB) in done.write
