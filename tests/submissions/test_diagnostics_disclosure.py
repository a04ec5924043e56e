"""Diagnostics of a hidden split give no question's outcome away through an all-right or
all-wrong group (docs/diagnostics.md#hidden-splits-what-is-never-shown): planted groups, the
real scoring and diagnostics path, and an observer who reads everything the API publishes."""
import pytest
from django.test import Client
from rest_framework.test import APIClient

from benchmark import cues
from benchmark.models import TestSet as Split
from submissions import diagnostics
from submissions.intake import submit_predictions
from submissions.models import DiagnosticsStatus, Submission
from submissions.tasks import compute_diagnostics, score_submission
from tests.factories import (
    WH_WORDS,
    make_task_from_gold,
    make_user,
    perfect_predictions,
    synthetic_span_gold,
    upload_file,
)

pytestmark = pytest.mark.django_db

N_QUESTIONS = 84  # 12 of each of the 7 question words


def forces_members(total, n):
    """Whether a published sum of n outcomes in [0, 1] pins down every member: the range it
    leaves each member, [max(0, total - (n - 1)), min(1, total)], is not all of [0, 1]."""
    tolerance = 1e-9
    return n > 0 and (total - (n - 1) > tolerance or total < 1 - tolerance)


def forced_groups(published, n_questions, answer_f1_total):
    """An observer of the entry's API JSON: every group shown with its size and value, and every
    remainder the public totals give away (n questions, the answer F1 score), checked with
    ``forces_members``. Returns the groups that give their members' outcomes away."""
    found = []
    qt = published.get("question_types")
    if qt:
        for test in qt["categorical"]["tests"]:
            blocks = [(label, g["correct"], g["n"]) for label, g in test["groups"].items()]
            blocks.append(("rest", qt["n_correct"] - sum(b[1] for b in blocks), qt["n_items"] - sum(b[2] for b in blocks)))
            found += [(test["variable"], *block) for block in blocks if forces_members(block[1], block[2])]
        for test in qt["one_vs_rest"]["tests"]:
            correct = test["accuracy"] * test["n"]
            for label, total, n in ((test["group"], correct, test["n"]),
                                    ("rest of " + test["group"], qt["n_correct"] - correct, qt["n_items"] - test["n"])):
                if forces_members(round(total), n):
                    found.append(("one-vs-rest", label, total, n))
    for prop in (published.get("linguistic_bias") or {}).get("properties", []):
        blocks = [(b["label"], b["f1"] * b["n"], b["n"]) for b in prop["bins"]]
        if prop["applicable"]:
            blocks.append(("rest", answer_f1_total - sum(b[1] for b in blocks), n_questions - sum(b[2] for b in blocks)))
        found += [(prop["name"], *block) for block in blocks if forces_members(block[1], block[2])]
    for row in (published.get("icq") or {}).get("accuracy_test", []):
        if row.get("acc_with") is not None:
            for side in ("with", "without"):
                n = row[f"n_{side}"]
                if forces_members(round(row[f"acc_{side}"] * n), n):
                    found.append(("icq", row["value"], side))
    return found


def planted_predictions(gold):
    """Every "When" question right, every "Why" question wrong, the other words a mix."""
    predictions = perfect_predictions(gold)
    for i, key in enumerate(sorted(predictions)):
        word = WH_WORDS[i % len(WH_WORDS)]
        if word == "Why" or (word != "When" and i % 3 == 0):
            predictions[key] = {"answer": "wrong", "evidence": "wrong"}
    return predictions


@pytest.fixture
def hidden_span_entry(tmp_path, settings):
    settings.DIAGNOSTICS_PERMUTATIONS = 500
    gold = synthetic_span_gold(N_QUESTIONS)
    task = make_task_from_gold(tmp_path, gold)
    assert task.current_test_set().is_hidden
    sub = submit_predictions(user=make_user(), task=task, uploaded_file=upload_file(planted_predictions(gold)),
                             method_name="planted")
    score_submission(sub.pk)
    assert compute_diagnostics(sub.pk) == DiagnosticsStatus.DONE
    return Submission.objects.get(pk=sub.pk)


def api_view(sub):
    """What anyone can read: the diagnostics endpoint and the entry's scores."""
    body = APIClient().get(f"/api/submissions/{sub.pk}/diagnostics/").json()
    scores = APIClient().get(f"/api/submissions/{sub.pk}/").json()["scores"]
    return body["diagnostics"], scores["answer_f1"] / 100 * N_QUESTIONS


def test_nothing_the_api_publishes_pins_down_a_question_of_a_hidden_split(hidden_span_entry):
    published, f1_total = api_view(hidden_span_entry)
    assert forced_groups(published, N_QUESTIONS, f1_total) == []
    # The planted groups were there and were pooled, and the page's note has their groupings.
    question_type = next(t for t in published["question_types"]["categorical"]["tests"]
                         if t["variable"] == "question_type")
    assert {"when", "why"} <= set(question_type["pooled_for_outcomes"])
    words = next(p for p in published["linguistic_bias"]["properties"] if p["name"] == "question_words")
    assert {"when", "why"} <= set(words["pooled_for_outcomes"])
    assert published["disclosure"]["version"] == diagnostics.DISCLOSURE_VERSION
    assert "question type" in published["disclosure"]["suppressed"]
    # Every question is still in the tests, and reading it back changes nothing.
    assert sum(g["n"] for g in question_type["groups"].values()) == N_QUESTIONS
    assert diagnostics.published(published, hidden=True) == published


def test_a_public_split_keeps_every_group(hidden_span_entry):
    """The same entry's diagnostics computed as for a public (dev) split: the planted groups
    are shown with their exact values, and the observer above does find them."""
    sub = hidden_span_entry
    sub.test_set.split = Split.DEV  # in memory only: what run() does for a public split
    public = diagnostics.run(sub, n_permutations=500)
    assert "disclosure" not in public
    question_type = next(t for t in public["question_types"]["categorical"]["tests"] if t["variable"] == "question_type")
    assert question_type["groups"]["when"] == {"n": 12, "correct": 12, "accuracy": 1.0}
    assert question_type["groups"]["why"]["accuracy"] == 0.0
    f1_total = sum(row[0] for row in sub.item_scores)
    assert {"when", "why"} <= {g[1] for g in forced_groups(public, N_QUESTIONS, f1_total)}
    assert diagnostics.published(public, hidden=False) is public


def test_the_page_says_which_groupings_were_coarsened_and_why(hidden_span_entry):
    page = Client().get(f"/submissions/{hidden_span_entry.pk}/").content.decode()
    assert 'id="outcome-groups-note"' in page
    assert "all answered right, or all wrong" in page and "question type" in page
    assert "Pooled so that no group gives its questions' outcomes away" in page
    for label in ("when", "why"):
        assert f"<td>{label}</td>" not in page and f">{label}</text>" not in page


def test_diagnostics_stored_before_the_rule_are_filtered_when_read(hidden_span_entry):
    """A hidden entry computed before the rule stored the exact values (as for a public split);
    read back, nothing it shows pins down a question, and the page is told to recompute."""
    sub = hidden_span_entry
    sub.test_set.split = Split.DEV
    legacy = diagnostics.run(sub, n_permutations=500)
    f1_total = sum(row[0] for row in sub.item_scores)
    assert forced_groups(legacy, N_QUESTIONS, f1_total)
    shown = diagnostics.published(legacy, hidden=True)
    assert forced_groups(shown, N_QUESTIONS, f1_total) == []
    assert shown["disclosure"]["recompute"] is True and shown["disclosure"]["suppressed"]
    question_type = next(t for t in shown["question_types"]["categorical"]["tests"] if t["variable"] == "question_type")
    assert question_type["withheld"] and question_type["groups"] == {} and question_type["p_value"] is None
    assert shown["question_types"]["one_vs_rest"]["tests"] == []
    assert legacy["question_types"]["categorical"]["tests"][0]["groups"]  # the stored copy is untouched


def multichoice_gold(n_questions=36):
    """One question per passage. Questions 0-11 have "He lit a lantern" as the gold option (the
    only option with the word); the others have no lantern at all."""
    data = []
    for i in range(n_questions):
        lantern = i < 12
        options = (["He lit a lantern.", "He slept.", "He ran home.", "He ate bread."] if lantern
                   else ["He sang.", "He swam.", "He read a book.", "He cooked rice."])
        answer = "A" if lantern else "ABCD"[i % 4]
        data.append({"id": f"mc{i}", "article": f"Story {i}. Something happened at night.",
                     "questions": ["What did he do?"], "options": [options], "answers": [answer],
                     "evidences": [[f"Story {i}."]]})
    return {"version": "expmrc-race-synthetic", "data": data}


def test_an_all_right_icq_cue_group_is_withheld_through_the_real_path(tmp_path):
    gold = multichoice_gold()
    task = make_task_from_gold(tmp_path, gold, slug="expmrc-race", name="RACE+")
    test_set = task.current_test_set()
    assert test_set.is_hidden
    cues.set_status(test_set, status=cues.NO_REFERENCE, cues=[{"feature": "word", "value": "lantern"}], note="")
    predictions = perfect_predictions(gold)
    for i in range(12, 36, 2):  # half of the questions without the cue answered wrongly
        right = "ABCD".index(predictions[f"mc{i}-0"]["answer"])
        predictions[f"mc{i}-0"]["answer"] = "ABCD"[(right + 1) % 4]
    sub = submit_predictions(user=make_user(), task=task, uploaded_file=upload_file(predictions), method_name="mc")
    score_submission(sub.pk)
    assert compute_diagnostics(sub.pk) == DiagnosticsStatus.DONE
    published = APIClient().get(f"/api/submissions/{sub.pk}/diagnostics/").json()["diagnostics"]
    [row] = published["icq"]["accuracy_test"]
    assert row["value"] == "lantern" and row["withheld"] is True and (row["n_with"], row["n_without"]) == (12, 24)
    assert row["acc_with"] is None and row["delta"] is None and row["p_holm"] is None
    assert forced_groups(published, 36, 0) == []
    assert "ICQ accuracy test (1 cue)" in published["disclosure"]["suppressed"]
    page = Client().get(f"/submissions/{sub.pk}/").content.decode()
    assert "withheld: all right or all wrong on one side" in page and 'id="outcome-groups-note"' in page
