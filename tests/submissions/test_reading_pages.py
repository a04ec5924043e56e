"""Pages state the limits of their readings: each diagnostic its null hypothesis and, where it is
low, its power (figures from scoring/analysis/reading_limits.py); boards that a shared tier is no
evidence of equality; an unranked result says so as prominently as its score."""
import html
import re

import pytest
from django.template.loader import render_to_string
from django.test import Client

from benchmark.tasks import discover_cues
from leaderboards.boards import benchmark_average_rows
from scoring.analysis import reading_limits
from scoring.analysis.skills import READING_LARGE
from submissions.intake import submit_predictions
from submissions.models import Status, Submission
from submissions.tasks import compute_diagnostics, score_submission
from submissions.views import present_details
from tests.benchmark.test_classification_task import nli_task, rows  # noqa: F401 (nli_task: a fixture)
from tests.factories import make_task_from_gold, make_tiny_track, make_user, synthetic_span_gold, upload_file
from tests.submissions.test_diagnostics import scored_span  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


def text_of(page):
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def test_diagnostics_state_their_nulls_power_and_what_no_does_not_mean(scored_span):  # noqa: F811
    sub, _, _ = scored_span
    compute_diagnostics(sub.pk)
    page = text_of(Client().get(f"/submissions/{sub.pk}/").content.decode())
    figures = reading_limits.FIGURES
    assert "Null hypothesis: whether a question is answered correctly does not depend on the variable tested" in page
    assert f"flags {figures['qt_power']} of runs" in page
    assert f"in only {figures['qt_power_published']} of runs" in page and "TVD (as published)" in page
    assert "not evidence that every type is answered equally well" in page
    assert "Null hypothesis, per property: F1 does not depend on the subset" in page
    assert f"in only {figures['bias_power_05']} of runs at p < 0.05" in page
    assert "A p-value above 0.05 is therefore not evidence of no bias" in page


def test_diagnostics_stored_before_the_weighted_statistic_are_labelled_as_published(scored_span):  # noqa: F811
    sub, _, _ = scored_span
    compute_diagnostics(sub.pk)
    stored = Submission.objects.get(pk=sub.pk).diagnostics
    for test in stored["question_types"]["categorical"]["tests"]:
        # What an older release stored: Luo's statistic under "statistic", no name.
        test["statistic"], test["p_value"] = test.pop("statistic_published"), test.pop("p_value_published")
        del test["statistic_name"]
    Submission.objects.filter(pk=sub.pk).update(diagnostics=stored)
    page = Client().get(f"/submissions/{sub.pk}/").content.decode()
    table = page[page.index('id="categorical-tests"'):page.index("</table>", page.index('id="categorical-tests"'))]
    assert table.count("computed before the size-weighted test") == 3


def scored(task, name, predictions):
    sub = submit_predictions(user=make_user(name), task=task, method_name=name, uploaded_file=upload_file(predictions))
    score_submission(sub.pk)
    return Submission.objects.get(pk=sub.pk)


def test_an_unranked_result_says_so_as_prominently_as_its_score(tmp_path):
    task = make_tiny_track(tmp_path).task
    gold = task.current_test_set().gold
    ids = sorted(gold)
    first = {sid: [1.0] + [0.0] * (len(gold[sid]["sentences"]) - 1) for sid in ids}
    failed = scored(task, "Mostly failed", {sid: first[sid] for sid in ids[: (len(ids) - 1) // 2]})
    fine = scored(task, "Mostly fine", first)
    assert failed.status == fine.status == Status.SCORED

    page = Client().get(f"/submissions/{failed.pk}/").content.decode()
    status = re.search(r'<span class="status ([^"]+)" id="status">([^<]+)</span>', page)
    assert status.groups() == ("status-unranked", "Scored, not ranked")
    n_failed = failed.details["quackie"]["fails"]
    banner = text_of(page[page.index('id="unranked"'):page.index("</p>", page.index('id="unranked"'))])
    assert f"Not ranked : {n_failed} of {len(ids)} samples failed (more than half)" in banner
    scores = page[page.index('id="scores"'):page.index("</table>", page.index('id="scores"'))]
    assert 'class="num primary"' not in scores  # no bold score as if it were ranked

    page = Client().get(f"/submissions/{fine.pk}/").content.decode()
    assert re.search(r'<span class="status status-scored" id="status">Scored</span>', page)
    assert 'id="unranked"' not in page and 'class="num primary"' in page


def test_boards_say_a_shared_tier_is_no_evidence_of_equality_and_invite_only_where_they_take_entries(tmp_path):
    task = make_task_from_gold(tmp_path, synthetic_span_gold(20))
    page = text_of(Client().get(f"/tasks/{task.slug}/").content.decode())
    assert "A shared tier is not evidence that entries are equal" in page
    assert "be the first" in page
    task.accepts_submissions = False
    task.save()
    page = text_of(Client().get(f"/tasks/{task.slug}/").content.decode())
    assert "be the first" not in page


def test_the_skills_reading_column_does_not_repeat_its_legend(tmp_path):
    task = make_task_from_gold(tmp_path, synthetic_span_gold(20))
    page = text_of(Client().get(f"/tasks/{task.slug}/skills/").content.decode())
    assert page.count(READING_LARGE) == 1  # the legend, once
    assert "small gap = shortcut" in page and "small gap = robust" in page


def test_the_compare_page_names_test_sets_readably_and_states_the_paired_null(tmp_path):
    gold = synthetic_span_gold(20)
    task = make_task_from_gold(tmp_path, gold, version="dev-as-test-1")
    predictions = {qa["id"]: {"answer": f"token{i}", "evidence": f"Fact {i} holds."}
                   for i, qa in enumerate(qa for p in gold["data"][0]["paragraphs"] for qa in p["qas"])}
    a = scored(task, "A", predictions)
    b = scored(task, "B", {key: value if i % 2 else {"answer": "x", "evidence": "x"}
                           for i, (key, value) in enumerate(predictions.items())})
    page = Client().get(f"/compare/?a={a.pk}&b={b.pk}").content.decode()
    assert "vdev-as-test-1" not in page
    assert text_of(page).count("test set dev-as-test-1") == 2
    assert "is not evidence that they are equal" in text_of(page)


def test_the_entry_skill_table_reads_its_own_interval_instead_of_repeating_the_legend():
    def gap(skill, low, high):
        return {"skill": skill, "name": skill, "group": "reading", "reading": READING_LARGE, "n": 40,
                "original_f1": 80.0, "variant_f1": 80.0 - (low + high) / 2, "gap": (low + high) / 2,
                "ci_low": low, "ci_high": high}

    details = present_details({"skills": {"s4": gap("s4", 2.0, 9.0), "s5": gap("s5", -1.0, 3.0),
                                          "s8": gap("s8", -7.0, -1.5)}})
    page = text_of(render_to_string("submissions/_details.html", {"details": details}))
    table = page[page.index("This entry"):]
    assert READING_LARGE not in table
    assert table.count("lower F1 without the skill (interval above 0)") == 1
    assert table.count("no clear gap: the interval contains 0, which is not evidence of no effect") == 1
    assert table.count("higher F1 without the skill (interval below 0)") == 1


def test_the_icq_section_states_its_nulls_and_how_often_the_papers_reading_misfires(nli_task):  # noqa: F811
    discover_cues(nli_task.current_test_set().pk)
    predictions = {row["id"]: row["label"] for row in rows("nli_predictions.jsonl")}
    sub = submit_predictions(user=make_user(), task=nli_task, uploaded_file=upload_file(predictions), method_name="Cues")
    score_submission(sub.pk)
    compute_diagnostics(sub.pk)
    page = text_of(Client().get(f"/submissions/{sub.pk}/").content.decode())
    figures = reading_limits.FIGURES
    assert "Null hypothesis, per cue: the entry is as accurate where the cue appears" in page
    assert "Null hypothesis, per cue: the entry predicts the cue's label no more often than a cue-free model" in page
    assert (f"on {figures['icq_published_four']} of cues on 4-option tasks and {figures['icq_published_two']} "
            "on 2-option tasks") in page
    assert "it flags cue-free models on 4-option tasks" not in page  # the old, narrower claim


def test_the_average_board_matches_systems_as_its_text_says(tmp_path):
    gold = synthetic_span_gold(12)
    squad = make_task_from_gold(tmp_path, gold, slug="expmrc-squad")
    cmrc = make_task_from_gold(tmp_path, gold, slug="expmrc-cmrc2018", name="CMRC 2018")
    assert squad.benchmark_id == cmrc.benchmark_id
    predictions = {qa["id"]: {"answer": qa["answers"][0]["text"], "evidence": qa["evidences"][0]}
                   for p in gold["data"][0]["paragraphs"] for qa in p["qas"]}
    alice, bob = make_user("alice"), make_user("bob")

    def entry(user, task, method, system=""):
        sub = submit_predictions(user=user, task=task, method_name=method, uploaded_file=upload_file(predictions))
        Submission.objects.filter(pk=sub.pk).update(system_name=system)
        score_submission(sub.pk)

    entry(alice, squad, "Run on SQuAD", "Sys")  # one system under two method names
    entry(alice, cmrc, "Run on CMRC", "Sys")
    entry(alice, squad, "Plain")  # no system name: the method name
    entry(alice, cmrc, "Plain")
    entry(bob, squad, "Run on SQuAD", "Sys")  # the same system name from another account: only one task
    _, rows = benchmark_average_rows(squad.benchmark)
    assert sorted(row["method"] for row in rows if row["kind"] == "submission") == ["Plain", "Sys"]
    page = text_of(Client().get(f"/benchmarks/{squad.benchmark.slug}/").content.decode())
    assert "Systems are matched by account and system name (the method name when no system name was given)" in page
