"""What of a stored ICQ cue table may be shown (docs/diagnostics.md#hidden-splits-what-is-never-shown)."""
from benchmark.cues import NO_REFERENCE, PUBLIC_CUE_FIELDS, public_cue_table


def stored_part(status="done"):
    def cue(value, mse, test_right):
        return {"feature": "word", "value": value, "n_reference": 40, "n_test": 14, "mse": mse, "jsd": 0.2,
                "cueness": mse / 1.22, "cueness_published": 0.06, "cue_label": "wrong",
                "reference_dist": {"right": 0.1, "wrong": 0.9}, "prior": {"right": 0.25, "wrong": 0.75},
                "test_dist": {"right": test_right, "wrong": 1 - test_right}}

    return {"status": status, "attempts": 1, "n_test": 400, "n_reference": 2000, "note": "Reference split R: v1.",
            "cues": [cue("as", 0.01, 0.0), cue("to", 0.03, 0.5)]}


def test_a_hidden_split_shows_the_reference_side_only_ordered_by_its_skew():
    shown = public_cue_table(stored_part(), hidden=True)
    assert [c["value"] for c in shown["cues"]] == ["to", "as"]  # by MSE on R, not by cueness with JSD
    for cue in shown["cues"]:
        assert set(cue) <= set(PUBLIC_CUE_FIELDS)
        assert not {"test_dist", "jsd", "cueness", "cueness_published"} & set(cue)
    assert shown["hidden"] is True and "not shown" in shown["note"] and shown["note"].startswith("Reference split")


def test_a_table_found_from_the_hidden_answers_is_not_shown_at_all():
    shown = public_cue_table(stored_part(NO_REFERENCE), hidden=True)
    assert shown["cues"] == [] and shown["status"] == NO_REFERENCE and "not shown" in shown["note"]
    assert "as" not in str(shown["cues"])


def test_a_public_split_shows_everything():
    part = stored_part()
    assert public_cue_table(part, hidden=False) == {**part, "hidden": False}
