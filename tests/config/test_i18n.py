"""Pages in English or Simplified Chinese (config/locale.py, locale/zh_Hans): the committed
catalogue is compiled from its source, the main pages carry no untranslated template text under
zh-hans, the chooser and Accept-Language pick the language, a stored page never crosses
languages, and what programs read (API, CSV) does not change with the reader's language."""
import ast
import gettext
import html
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.utils import translation

from benchmark.models import ReportedResult
from leaderboards import wording
from scoring.stats import TIER_PROCEDURE
from submissions import intake
from submissions.tasks import score_submission
from tests.factories import fixture_gold, make_task, make_user, perfect_predictions, token_for, upload_file

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _default_language_afterwards():
    """A request leaves its language active in the thread (the next request sets its own): put
    the default back, so that later tests calling gettext outside a request read English."""
    yield
    translation.deactivate()

CATALOGUE = Path(settings.BASE_DIR) / "locale" / "zh_Hans" / "LC_MESSAGES"
CHINESE = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9,en;q=0.5"}
ENGLISH = {"HTTP_ACCEPT_LANGUAGE": "en-GB,en;q=0.9"}


def po_entries(path: Path) -> list[dict[str, str]]:
    """The entries of a .po file: {"msgid": ..., "msgid_plural": ..., "msgstr[0]": ...}, with
    their flags under "#,"; the header (empty msgid) and obsolete entries left out."""
    entries = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        entry: dict[str, str] = {"#,": ""}
        field = None
        for line in block.splitlines():
            if line.startswith("#,"):
                entry["#,"] += line[2:]
            elif line.startswith("#"):
                continue
            elif line.startswith('"'):
                entry[field] += ast.literal_eval(line)
            else:
                field, _, quoted = line.partition(" ")
                entry[field] = ast.literal_eval(quoted)
        if entry.get("msgid"):
            entries.append(entry)
    return entries


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def visible_text(response) -> str:
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", response.content.decode(), flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


def test_compiled_catalogue_is_the_source_compiled():
    """django.mo is committed (a server may lack gettext): it must say what django.po says,
    every translated entry and nothing else."""
    entries = [e for e in po_entries(CATALOGUE / "django.po") if "fuzzy" not in e["#,"]]
    with open(CATALOGUE / "django.mo", "rb") as compiled:
        catalogue = gettext.GNUTranslations(compiled)
    translated = 0
    for entry in entries:
        if "msgid_plural" in entry:
            if entry["msgstr[0]"]:
                translated += 1
                assert catalogue.ngettext(entry["msgid"], entry["msgid_plural"], 2) == entry["msgstr[0]"], entry["msgid"]
        elif entry["msgstr"]:
            translated += 1
            compiled_text = (catalogue.pgettext(entry["msgctxt"], entry["msgid"]) if "msgctxt" in entry
                             else catalogue.gettext(entry["msgid"]))
            assert compiled_text == entry["msgstr"], (
                f"django.mo is older than django.po for {entry['msgid']!r}: run compilemessages")
    # The header is one more message in the compiled catalogue.
    assert len(catalogue._catalog) == translated + 1, "django.mo holds messages django.po no longer has"
    assert translated > 300


def test_translations_keep_their_placeholders_and_markup():
    """A translation that drops %(name)s breaks the page (KeyError) or loses a number; one that
    drops a tag leaves a link or an element open."""
    tokens = re.compile(r"%\([a-z_]+\)s|%%|</?[a-z]+[^>]*>")
    for entry in po_entries(CATALOGUE / "django.po"):
        source = entry.get("msgid_plural", entry["msgid"])
        translation = entry.get("msgstr[0]", entry.get("msgstr", ""))
        if translation:
            assert sorted(tokens.findall(translation)) == sorted(tokens.findall(source)), entry["msgid"]


# English phrases of the main pages' templates: none of them may be left under zh-hans.
ENGLISH_TEMPLATE_PHRASES = [
    "Explainable, bias-aware leaderboards", "Download the public inputs", "Best entry", "No tasks yet",
    "no submissions yet", "My submissions", "Log in", "Sign up", "How to read this board", "Submit predictions",
    "Download inputs", "No entries yet", "No scored submissions yet", "Export:", "Tiers:", "Official page",
    "Compare two entries", "Entry numbers", "Wrong username", "Forgot your password", "API docs",
    "Scores follow the official scorers", "Hidden test set version",
]


def test_main_pages_under_zh_hans_carry_no_english_template_text():
    task = make_task()
    client = Client()
    pages = ["/", task.get_absolute_url(), f"/benchmarks/{task.benchmark.slug}/", "/compare/",
             "/accounts/login/", "/accounts/signup/"]
    chinese_seen = set()
    for path in pages:
        response = client.get(path, **CHINESE)
        assert response.status_code == 200, path
        assert response["Content-Language"] == "zh-hans"
        assert '<html lang="zh-hans">' in response.content.decode()
        text = visible_text(response)
        left = [phrase for phrase in ENGLISH_TEMPLATE_PHRASES if phrase in text]
        assert not left, f"{path} still says {left} in English"
        chinese_seen.update(word for word in ("排行榜", "比较", "登录", "注册", "可解释、偏差感知的排行榜", "如何解读本榜单",
                                              "隐藏测试集", "下载输入", "提交预测", "比较两个条目", "用户名")
                            if word in text)
    assert chinese_seen == {"排行榜", "比较", "登录", "注册", "可解释、偏差感知的排行榜", "如何解读本榜单", "隐藏测试集",
                            "下载输入", "提交预测", "比较两个条目", "用户名"}


def test_english_stays_the_default():
    make_task()
    for headers in ({}, ENGLISH, {"HTTP_ACCEPT_LANGUAGE": "fr-FR,fr;q=0.9"}):
        response = Client().get("/", **headers)
        assert '<html lang="en">' in response.content.decode()
        assert "Explainable, bias-aware leaderboards" in visible_text(response)
        assert "可解释" not in visible_text(response)


def test_chooser_switches_language_and_returns_to_the_page():
    """The header's chooser posts to set_language: no CSRF token is needed (pages stored for
    anonymous readers carry none), the reader lands on the page they were on, and the choice
    outlasts Accept-Language."""
    task = make_task()
    client = Client(enforce_csrf_checks=True)
    board = client.get(task.get_absolute_url(), **ENGLISH)
    chooser = re.search(r'<form[^>]*id="language-chooser".*?</form>', board.content.decode(), re.S).group(0)
    assert f'name="next" value="{task.get_absolute_url()}"' in chooser
    assert 'value="zh-hans" lang="zh-hans">简体中文</option>' in chooser

    answer = client.post("/i18n/setlang/", {"language": "zh-hans", "next": task.get_absolute_url()}, **ENGLISH)
    assert answer.status_code == 302 and answer["Location"] == task.get_absolute_url()
    chinese = client.get(task.get_absolute_url(), **ENGLISH)
    assert "如何解读本榜单" in visible_text(chinese)
    assert 'value="zh-hans" lang="zh-hans" selected>' in chinese.content.decode()

    client.post("/i18n/setlang/", {"language": "en", "next": "/"})
    assert "How to read this board" in visible_text(client.get(task.get_absolute_url(), **CHINESE))


def test_chooser_refuses_a_foreign_next_address():
    answer = Client().post("/i18n/setlang/", {"language": "zh-hans", "next": "https://elsewhere.example/"})
    assert answer.status_code == 302 and answer["Location"] == "/"


def test_a_stored_page_never_crosses_languages():
    """Anonymous pages are rendered once per ETag and kept in the shared cache: the language
    must be part of that key, or the first reader's language would be everyone's."""
    task = make_task()
    client = Client()
    english = client.get(task.get_absolute_url(), **ENGLISH)
    chinese = client.get(task.get_absolute_url(), **CHINESE)
    assert english["ETag"] != chinese["ETag"]
    assert "如何解读本榜单" in visible_text(chinese) and "How to read this board" in visible_text(english)
    assert "Accept-Language" in chinese["Vary"]
    # A browser that switched language, holding the English copy, gets the Chinese page, not a 304.
    again = client.get(task.get_absolute_url(), HTTP_IF_NONE_MATCH=english["ETag"], **CHINESE)
    assert again.status_code == 200 and "如何解读本榜单" in visible_text(again)
    assert client.get(task.get_absolute_url(), HTTP_IF_NONE_MATCH=english["ETag"], **ENGLISH).status_code == 304


def test_what_programs_read_does_not_depend_on_the_reader_language():
    """The API, CSV exports and inputs download give the same bytes whatever Accept-Language
    says, and do not vary on it; API error messages stay in English (DRF ships Chinese ones)."""
    task = make_task()
    client = Client()
    paths = [f"/api/v1/tasks/{task.slug}/leaderboard/", f"/api/v1/tasks/{task.slug}/", "/api/v1/benchmarks/",
             f"/tasks/{task.slug}/leaderboard.csv", f"/tasks/{task.slug}/inputs.json"]
    for path in paths:
        english, chinese = client.get(path, **ENGLISH), client.get(path, **CHINESE)
        assert english.status_code == chinese.status_code == 200, path
        assert body(english) == body(chinese), path
        assert "Accept-Language" not in chinese.get("Vary", ""), path
        assert not chinese.has_header("Content-Language"), path

    make_user("bob")
    refused = client.post("/api/v1/auth/token/", {"username": "bob", "password": "wrong"}, **CHINESE)
    assert refused.status_code == 400
    assert "Unable to log in with provided credentials." in refused.content.decode()


def test_python_side_messages_follow_the_page_language():
    user = make_user("carol")
    client = Client()
    client.force_login(user)
    response = client.post("/accounts/settings/", {"email": "", "team": "", "notify_on_finish": "on"}, **CHINESE)
    assert response.status_code == 400
    assert "要接收运行通知，请填写电子邮件地址。" in visible_text(response)
    response = client.post("/accounts/token/", follow=True, **CHINESE)
    assert "已创建新的 API 令牌；旧令牌已失效。" in visible_text(response)
    task = make_task()
    intake.submit_predictions(user=user, task=task, method_name="Mine", public=False,
                              uploaded_file=upload_file(perfect_predictions(fixture_gold(task.slug))))
    mine = visible_text(client.get("/submissions/", **CHINESE))
    assert "除已拒绝外的全部" in mine and "All but rejected" not in mine


def test_kind_words_follow_the_page_language_and_stay_english_elsewhere():
    """A kind's label and its "How to read this board" sentences are English in the code (forms,
    commands and the API use them) and translated when a page renders."""
    task = make_task()
    chinese = visible_text(Client().get(task.get_absolute_url(), **CHINESE))
    for words in ("片段抽取", "按 Overall F1 从高到低排名", "预测答案与最接近的参考答案之间的词元重合度", "置信区间条", "共 3 个问题"):
        assert words in chinese
    for words in ("Span extraction", "token overlap", "Ranked by Overall F1", "CI bar"):
        assert words not in chinese
    english = visible_text(Client().get(task.get_absolute_url(), **ENGLISH))
    assert "Span extraction" in english and "Ranked by Overall F1, highest first" in english
    assert task.get_kind_display() == "Span extraction"


def test_scores_and_counts_read_the_same_in_both_languages(settings):
    """Numbers are not localised into something else (no digit grouping, the same decimal
    point): a board's numeric cells say the same in English and in Chinese, so columns keep
    their alignment, and the CSV beside them says the same numbers."""
    settings.BOOTSTRAP_RESAMPLES = 200
    task = make_task()
    ReportedResult.objects.create(task=task, kind="human", method="Human Performance", team="ExpMRC authors",
                                  scores={"answer_f1": 90.8, "evidence_f1": 92.1, "overall_f1": 1083.6}, source="paper")
    entry = intake.submit_predictions(user=make_user("dora"), task=task, method_name="Perfect", public=True,
                                      uploaded_file=upload_file(perfect_predictions(fixture_gold(task.slug))))
    score_submission(entry.pk)

    def numeric_cells(response):
        table = re.search(r'<table[^>]*id="leaderboard".*?</table>', response.content.decode(), re.S).group(0)
        return [" ".join(re.sub(r"<[^>]+>", " ", cell).split())
                for cell in re.findall(r'<td class="num[^"]*">(.*?)</td>', table, re.S)]

    english = numeric_cells(Client().get(task.get_absolute_url(), **ENGLISH))
    chinese = numeric_cells(Client().get(task.get_absolute_url(), **CHINESE))
    assert english == chinese
    assert "1083.600" in english and any(cell.startswith("100.000") for cell in english), english


def test_upload_form_speaks_chinese():
    """The upload form's labels, help and upload kinds (declared by the task's kind) are
    translated on the page; the kind's own words stay English for the API."""
    task = make_task()
    client = Client()
    client.force_login(make_user("erin"))
    page = visible_text(client.get(f"/tasks/{task.slug}/submit/", **CHINESE))
    for words in ("方法名称", "隐藏测试集的预测结果", "技能预测：原始集 + 重构集（s1–s14）", "训练中使用的开发集", "未用于训练", "上传并评分"):
        assert words in page
    for words in ("Method name", "Predictions for the hidden test set", "Dev set used for training", "Upload and score"):
        assert words not in page
    assert task.kind_definition.upload_kinds[0][1] == "Predictions for the hidden test set"


def test_sorted_board_says_its_order_in_chinese():
    task = make_task()
    chinese = visible_text(Client().get(f"{task.get_absolute_url()}?sort=system&order=desc", **CHINESE))
    assert "按 系统名称，降序 排序" in chinese
    english = visible_text(Client().get(f"{task.get_absolute_url()}?sort=system&order=desc", **ENGLISH))
    assert "Sorted by system name, descending" in english


def test_the_tier_procedure_marked_for_translation_is_the_one_scoring_states():
    """scoring has no Django: its sentence is copied into leaderboards/wording.py for the
    catalogue, and a copy that drifted would leave the page in English without a word."""
    assert wording.TIER_PROCEDURE_MARKED == TIER_PROCEDURE
    with translation.override("zh-hans"):
        assert wording.tier_procedure() != TIER_PROCEDURE and "梯队" in wording.tier_procedure()


def test_expmrc_benchmark_page_in_chinese_with_its_chinese_subsets():
    """CMRC 2018 and C3 are Chinese: their benchmark page, average board included, reads in
    Chinese, while task names, metric names and the figures stay as they are."""
    for slug in ("expmrc-squad", "expmrc-cmrc2018", "expmrc-race", "expmrc-c3"):
        make_task(slug)
    chinese = visible_text(Client().get("/benchmarks/expmrc/", **CHINESE))
    for words in ("个子集的平均分：", "平均分为其不加权平均值，与ExpMRC 官方排行榜一致",
                  "片段抽取", "多项选择", "CMRC 2018", "Overall F1"):
        assert words in chinese, words
    for words in ("Average over", "unweighted mean", "Span extraction", "Multiple choice"):
        assert words not in chinese, words


def test_team_refusals_speak_the_page_language_and_english_in_the_api():
    """One refusal, two readers: the team page says it in Chinese, the API in English."""
    client = Client()
    client.force_login(make_user("fay"))
    page = client.post("/accounts/team/", {"action": "invite", "team": "nobody"}, **CHINESE)
    assert page.status_code == 400 and "没有这个团队。" in visible_text(page)
    created = client.post("/accounts/team/", {"action": "create", "name": "!!!"}, **CHINESE)
    assert "团队名称须包含字母或数字。" in visible_text(created)
    api = client.post("/api/v1/teams/", {"name": "!!!"}, content_type="application/json", **CHINESE)
    assert api.status_code == 400 and "A team needs a name with letters or digits." in api.content.decode()


def test_an_upload_refusal_speaks_the_page_language_and_english_in_the_api(settings):
    settings.SUBMISSIONS_PER_DAY = 0
    task = make_task()
    user = make_user("gus")
    client = Client()
    client.force_login(user)
    predictions = upload_file(perfect_predictions(fixture_gold(task.slug)))
    page = client.post(f"/tasks/{task.slug}/submit/", {"file": predictions, "method_name": "Mine"}, **CHINESE)
    assert f"已达每日上限：{task.slug} 每天可提交 0 次。" in visible_text(page)
    api = Client(HTTP_AUTHORIZATION=f"Token {token_for(user)}").post(
        f"/api/v1/tasks/{task.slug}/submissions/", {"file": upload_file(perfect_predictions(fixture_gold(task.slug))),
                                                    "method_name": "Mine"}, **CHINESE)
    assert api.status_code == 429 and f"Daily limit reached: 0 submissions per day for {task.slug}." in api.content.decode()
