"""The average board's definition when a subset is hidden: the page says which subsets it covers
and that the published ExpMRC average covers four; the maintainer sees the change before it
happens (the admin's form, the API's dry run) and is told when it happens."""
import html
import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

from benchmark.averages import average_change
from benchmark.models import ReportedResult, Task, Visibility
from leaderboards.store import rebuild_all
from tests.factories import make_task, make_user, token_for

pytestmark = pytest.mark.django_db

HUMAN = {"expmrc-squad": 91.3, "expmrc-cmrc2018": 92.9, "expmrc-race": 84.7, "expmrc-c3": 83.6}


def text(response):
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


def benchmark_page():
    rebuild_all()  # what the board worker does after a change
    return text(Client().get("/benchmarks/expmrc/"))


@pytest.fixture
def expmrc():
    tasks = {slug: make_task(slug) for slug in HUMAN}
    for slug, value in HUMAN.items():
        ReportedResult.objects.create(task=tasks[slug], kind=ReportedResult.HUMAN, method="Human Performance",
                                      scores={"overall_f1": value}, source="Cui et al., 2022")
    return tasks


def staff_client():
    staff = make_user("maintainer")
    staff.is_staff = staff.is_superuser = True
    staff.save()
    return staff


def human_average(page):
    """The human row's average on the average board: the last number of its row."""
    section = page[page.index("Average over"):]
    row = section[section.index("Human Performance"):section.index("Average covers") if "Average covers" in section
                  else None]
    row = row.split("The average covers")[0]
    return float(re.findall(r"\d+\.\d{3}", row)[-1])


def test_hiding_a_subset_is_announced_before_and_stated_on_the_page(expmrc):
    page = benchmark_page()
    assert "Average over 4 subsets: C3, CMRC 2018, RACE+, SQuAD" in page
    assert human_average(page) == pytest.approx(sum(HUMAN.values()) / 4, abs=5e-4)

    race = expmrc["expmrc-race"]
    warning = average_change(race, Visibility.HIDDEN)
    assert warning.startswith("RACE+ leaves the average board of ExpMRC: it will average 3 subsets "
                              "(C3, CMRC 2018, SQuAD) instead of 4")
    assert "covers four subsets (SQuAD, CMRC 2018, RACE+ and C3)" in warning
    assert average_change(race, Visibility.PUBLIC) == ""

    # The admin's form says it before saving; the save says it again.
    staff = staff_client()
    admin = Client()
    admin.force_login(staff)
    form = admin.get(f"/admin/benchmark/task/{race.pk}/change/").content.decode()
    assert "RACE+ leaves the average board of ExpMRC" in html.unescape(form)

    # The API: a dry run says it and changes nothing; the PATCH itself answers it too.
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(staff)}")
    dry = api.patch("/api/v1/tasks/expmrc-race/?dry_run=1", {"visibility": "hidden"}, format="json")
    assert dry.status_code == 200 and dry.json()["warnings"] == [warning]
    assert Task.objects.get(pk=race.pk).visibility == Visibility.PUBLIC
    done = api.patch("/api/v1/tasks/expmrc-race/", {"visibility": "hidden"}, format="json")
    assert done.status_code == 200 and done.json()["warnings"] == [warning]

    page = benchmark_page()
    assert "Average over 3 subsets: C3, CMRC 2018, SQuAD" in page
    assert 'href="/tasks/expmrc-race/"' not in Client().get("/benchmarks/expmrc/").content.decode()
    assert ("a subset that is hidden or has no current test set is left out, and the average, the human "
            "row's included, changes with it") in page
    assert "The published average on the official ExpMRC leaderboard covers four subsets" in page
    assert human_average(page) == pytest.approx((91.3 + 92.9 + 83.6) / 3, abs=5e-4)
