"""A rollout's analysis on plain data: `rollout.analysis` parsed against gitgate.yaml's
providers (file:line errors, a tenant's allowed providers), queries as templates whose
values can never leave their string literal, each measurement judged against `failIf`,
failures counted against `failureLimit` on an explicit clock, and the wave judged on
Karmada's health and the checks together."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gitgate.errors import ConfigError
from gitgate.karmada.dispatch import ClusterState, Health, Version
from gitgate.karmada.waves import RolloutState, step
from gitgate.model.analysisspec import Check, FailIf, Provider
from gitgate.model.promql import substituted, template_problem
from gitgate.progression.analysis import Sample, analyser, judged_sample, read_record
from gitgate.source.config import parse_bundle_options, parse_repo_config

T0 = datetime(2026, 11, 29, 12, tzinfo=UTC)
PROM = Provider("http://prometheus.monitoring:9090", "main")
REPO = ("analysis:\n"
        "  providers:\n"
        "    - {name: main, url: http://prometheus.monitoring:9090}\n"
        "    - {name: team-a-only, url: https://prom.team-a:9090, tenants: [team-a]}\n"
        "tenants:\n"
        "  - {name: team-a, paths: [team-a/**]}\n"
        "  - {name: team-b, paths: [team-b/**]}\n")
CHECK = ("rollout:\n"
         "  waves: [{clusters: [member1]}, {clusters: [member2]}]\n"
         "  analysis:\n"
         "    - name: error-rate\n"
         "      prometheus: {provider: main}\n"
         "      query: 'sum(rate(errors{cluster=\"{{cluster}}\"}[2m]))'\n"
         "      failIf: \"> 0.05\"\n"
         "      interval: 30s\n"
         "      failureLimit: 2\n")


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def options(bundle_yaml: str, folder: str = "team-a/web", repo: str = REPO):
    return parse_bundle_options(bundle_yaml, f"{folder}/bundle.yaml",
                                parse_repo_config(repo))


def test_a_check_resolves_its_provider_by_name_or_by_url():
    spec = options(CHECK).rollout
    assert spec.analysis == (Check("error-rate", PROM,
                                   'sum(rate(errors{cluster="{{cluster}}"}[2m]))',
                                   FailIf(">", 0.05), timedelta(seconds=30), 2),)
    by_url = options(CHECK.replace("{provider: main}",
                                   "{url: 'http://prometheus.monitoring:9090/'}")).rollout
    assert by_url.analysis[0].provider == PROM
    assert spec.as_dict()["analysis"][0]["failIf"] == "> 0.05"


@pytest.mark.parametrize(("change", "line", "message"), [
    (("{provider: main}", "{provider: elsewhere}"), 5,
     "rollout.analysis[0].prometheus: elsewhere is not in gitgate.yaml's analysis.providers"),
    (("{provider: main}", "{url: 'http://10.0.0.1:9090'}"), 5,
     "http://10.0.0.1:9090 is not in gitgate.yaml's analysis.providers"),
    (('"> 0.05"', '"above 0.05"'), 7, "rollout.analysis[0].failIf must be a comparison"),
    (("failureLimit: 2", "failureLimit: -1"), 9, "failureLimit must be a whole number"),
    (("interval: 30s", "interval: soon"), 8, "rollout.analysis[0].interval"),
    (('cluster="{{cluster}}"', "cluster={{cluster}}"), 6,
     "rollout.analysis[0].query: {{cluster}} stands outside a \"...\" string literal"),
    (('cluster="{{cluster}}"', 'cluster="{{namespace}}"'), 6,
     "{{namespace}} is not a placeholder"),
    (("      failIf", "      when: now\n      failIf"), 7,
     "unknown field(s) rollout.analysis[0].when"),
])
def test_a_bad_check_names_the_file_the_line_and_the_field(change, line, message):
    with pytest.raises(ConfigError) as caught:
        options(CHECK.replace(*change))
    assert message in caught.value.message
    assert (caught.value.file, caught.value.line) == ("team-a/web/bundle.yaml", line)


def test_a_tenant_uses_only_the_providers_it_is_allowed():
    own = CHECK.replace("{provider: main}", "{provider: team-a-only}")
    assert options(own).rollout.analysis[0].provider.name == "team-a-only"
    with pytest.raises(ConfigError) as caught:
        options(own, folder="team-b/web")
    assert caught.value.message == (
        "rollout.analysis[0].prometheus: provider team-a-only is not allowed for tenant team-b "
        "(gitgate.yaml analysis.providers tenants)")
    assert caught.value.line == 5  # the `- name:` line of the check


def test_no_provider_listed_means_no_query_runs_anywhere():
    with pytest.raises(ConfigError, match="listed: none"):
        options(CHECK, repo="")


def test_providers_name_their_credentials_and_ca_never_hold_them():
    with pytest.raises(ConfigError, match="must name them, never hold them"):
        parse_repo_config("analysis: {providers: [{name: p, url: 'http://p:9090', "
                          "credentials: {token: s3cret}}]}")
    with pytest.raises(ConfigError, match="without user, query or fragment"):
        parse_repo_config("analysis: {providers: [{name: p, url: 'http://u:pw@p:9090'}]}")
    found = parse_repo_config("analysis: {providers: [{name: p, url: 'https://p:9090', "
                              "credentials: {tokenFile: /run/prom/token}, "
                              "caFile: /run/prom/ca.crt}]}")
    assert found.analysis_providers == (
        Provider("https://p:9090", "p", "/run/prom/token", "/run/prom/ca.crt"),)


@pytest.mark.parametrize("name", [
    'member1"} or vector(1) #', "member1'} or vector(1) #", "a\\\"} or on() vector(1)",
    "x\n} or vector(1)"])
def test_a_name_can_never_leave_its_string_literal(name):
    for query in ('errors{cluster="{{cluster}}"}', "errors{cluster='{{cluster}}'}"):
        out = substituted(query, {"cluster": name, "bundle": "b", "revision": "r"})
        # what was substituted is one literal still: the query scans as a whole template
        # would, and its text outside the literal is the template's
        assert template_problem(out) == ""
        quote = query[len("errors{cluster=")]
        inside = out[len("errors{cluster=") + 1:-2]
        assert out.startswith("errors{cluster=" + quote) and out.endswith(quote + "}")
        assert _unescaped(inside) == name


def _unescaped(text: str) -> str:
    table = {"n": "\n", "r": "\r", "t": "\t"}
    out, index = [], 0
    while index < len(text):
        char = text[index]
        assert char not in "\"'" and char != "\n"  # no bare quote: the literal goes on
        if char == "\\":
            nxt = text[index + 1]
            out.append(table.get(nxt, nxt))
            index += 2
        else:
            out.append(char)
            index += 1
    return "".join(out)


def test_raw_literals_and_open_literals_are_refused():
    assert "outside" in template_problem("errors{cluster=`{{cluster}}`}")
    assert template_problem('errors{cluster="x}') == "a string literal is left open"


@pytest.mark.parametrize(("sample", "passed", "note"), [
    (Sample((0.01,)), True, "0.01, passes (fails if > 0.05)"),
    (Sample((0.01, 0.3)), False, "0.3 > 0.05"),
    (Sample(()), False, "the query returns no data"),
    (Sample((float("nan"),)), False, "nan > 0.05"),
    (Sample(error="main cannot be reached (NewConnectionError)"), False,
     "cannot be evaluated: main cannot be reached (NewConnectionError)"),
])
def test_a_measurement_passes_only_on_values_that_pass(sample, passed, note):
    check = Check("error-rate", PROM, "q", FailIf(">", 0.05))
    assert judged_sample(check, sample) == (passed, note)


class Measurer:
    """A Prometheus that answers what the test says, counting the queries."""

    def __init__(self, *answers: Sample) -> None:
        self.answers = list(answers)
        self.queries: list[str] = []

    def __call__(self, provider: Provider, query: str) -> Sample:
        self.queries.append(query)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


CHECK_2 = Check("error-rate", PROM, 'errors{cluster="{{cluster}}",bundle="{{bundle}}",'
                'revision="{{revision}}"}', FailIf(">", 0.05), timedelta(seconds=30), 2)


def test_failures_count_once_an_interval_and_fail_past_the_limit():
    measure = Measurer(Sample((0.5,)))
    analyse = analyser((CHECK_2,), "shop/web", "abc123", measure)
    first = analyse("", ("member1",), at(0))
    assert measure.queries == ['errors{cluster="member1",bundle="shop/web",revision="abc123"}']
    assert not first.holding and not first.failed and first.next_check == at(30)
    assert first.waiting == "error-rate on member1: 0.5 > 0.05 (1 of 2 failure(s) allowed)"
    again = analyse(first.record, ("member1",), at(10))  # not due: nothing asked
    assert len(measure.queries) == 1 and again.record == first.record
    second = analyse(again.record, ("member1",), at(30))
    assert not second.failed and read_record(second.record)["error-rate/member1"].failures == 2
    third = analyse(second.record, ("member1",), at(60))
    assert third.failed == ("error-rate on member1 failed 3 time(s), past its failureLimit 2: "
                            "0.5 > 0.05")


def test_a_server_that_cannot_answer_is_never_a_pass():
    def down(provider: Provider, query: str) -> Sample:
        raise ConnectionRefusedError

    check = Check("error-rate", PROM, "up", FailIf(">", 0.05))  # failureLimit 0
    judged = analyser((check,), "web", "r", down)("", ("member1",), at(0))
    assert not judged.holding
    assert judged.failed == ("error-rate on member1 failed 1 time(s), past its failureLimit "
                             "0: cannot be evaluated: ConnectionRefusedError")


def test_without_a_measurer_a_check_never_measured_holds_nothing():
    judged = analyser((CHECK_2,), "web", "r", None)("", ("member1",), at(0))
    assert (judged.holding, judged.failed) == (False, "")
    assert judged.waiting == "error-rate on member1: not measured yet"


def ready(name: str) -> ClusterState:
    return ClusterState(name, True, True, Health.HEALTHY, False, Version.CURRENT)


SPEC = options(CHECK).rollout


def baked_state(analysis: str = "") -> RolloutState:
    return RolloutState("d1", 0, at(0), healthy_since=at(1), analysis=analysis)


def test_a_wave_is_released_only_when_karmada_and_every_check_say_healthy():
    good = Measurer(Sample((0.01,)))
    analyse = analyser(SPEC.analysis, "web", "r", good)
    spec = SPEC.__class__(SPEC.waves, timedelta(seconds=5), SPEC.progress_deadline,
                          SPEC.on_failure, SPEC.analysis)
    baking = step(spec, baked_state(), "d1", "d1", {"member1": ready("member1")}, at(2),
                  analyse=analyse)
    assert baking.state.wave == 0 and "baking until" in baking.waiting_for
    released = step(spec, baking.state, "d1", "d1", {"member1": ready("member1")}, at(6),
                    analyse=analyse)
    assert released.state.wave == 1 and released.suspend == ()
    # Karmada's health alone is not enough: an analysis that never measured holds the wave
    unmeasured = step(spec, baked_state(), "d1", "d1", {"member1": ready("member1")}, at(6),
                      analyse=analyser(SPEC.analysis, "web", "r", None))
    assert unmeasured.state.wave == 0 and unmeasured.suspend == ("member2",)
    assert "waiting for its analysis: error-rate on member1: not measured yet" in (
        unmeasured.waiting_for)


def test_a_check_failed_past_its_limit_halts_the_wave_and_member2_stays_suspended():
    bad = Measurer(Sample((0.5,)))
    analyse = analyser(SPEC.analysis, "web", "r", bad)
    state = baked_state()
    for seconds in (2, 32, 62):
        done = step(SPEC, state, "d1", "d1", {"member1": ready("member1")}, at(seconds),
                    analyse=analyse)
        state = done.state
    assert done.halted and done.suspend == ("member2",) and done.next_check is None
    assert done.waiting_for == (
        "halted at wave 1 of 2 [member1]: analysis error-rate on member1 failed 3 time(s), "
        "past its failureLimit 2: 0.5 > 0.05")
    # a halted wave asks nothing more
    later = step(SPEC, state, "d1", "d1", {"member1": ready("member1")}, at(300),
                 analyse=analyse)
    assert later.halted and len(bad.queries) == 3
    assert RolloutState.from_json(state.to_json()) == state


def test_on_failure_continue_passes_over_a_wave_whose_check_failed():
    spec = SPEC.__class__(SPEC.waves, SPEC.bake, SPEC.progress_deadline, "continue",
                          tuple(c.__class__(c.name, c.provider, c.query, c.fail_if,
                                            c.interval, 0) for c in SPEC.analysis))
    done = step(spec, baked_state(), "d1", "d1", {"member1": ready("member1")}, at(2),
                analyse=analyser(spec.analysis, "web", "r", Measurer(Sample(()))))
    assert done.state.wave == 1 and not done.halted

