"""The leaderboard CSV is safe to open in a spreadsheet, and the CI bar draws any scale."""
import csv
import io
import re

import pytest
from django.test import Client

from core.templatetags.expbench import ci_bar
from submissions.intake import submit_predictions
from submissions.tasks import score_submission
from tests.factories import make_task, make_user, upload_file

pytestmark = pytest.mark.django_db


def test_a_method_name_that_looks_like_a_formula_reaches_the_spreadsheet_as_text():
    task = make_task("expmrc-squad")
    user = make_user("mallory", team="@SUM(A1:A9)")
    sub = submit_predictions(user=user, task=task, method_name='=HYPERLINK("http://evil.example","x")',
                             uploaded_file=upload_file({}), url="")
    score_submission(sub.pk)
    rows = list(csv.DictReader(io.StringIO(Client().get("/tasks/expmrc-squad/leaderboard.csv").content.decode())))
    mine = [row for row in rows if "HYPERLINK" in row["method"]]
    assert [row["method"] for row in mine] == ['\'=HYPERLINK("http://evil.example","x")']
    assert mine[0]["team"] == "'@SUM(A1:A9)"
    assert not any(value.startswith(("=", "+", "@")) for row in rows for value in row.values() if value)


def positions(svg):
    return [float(v) for v in re.findall(r'x="([0-9.]+)"', svg)]


def test_the_ci_bar_widens_its_axis_instead_of_clamping():
    inside = ci_bar(40.0, 60.0, 50.0)
    snr = ci_bar(150.0, 450.0, 300.0)  # an SNR-like score far above 100
    assert positions(inside)[1] == pytest.approx(36.0)  # 40 on 0..100 over 90 px
    start, end = positions(snr)[1], positions(snr)[1] + float(re.findall(r'width="([0-9.]+)" height="6"', snr)[0])
    assert start > 0 and end == pytest.approx(90.0)  # the interval is drawn, not squeezed against 100
    assert "95% CI 150.0 to 450.0" in snr
