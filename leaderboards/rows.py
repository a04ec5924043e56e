"""A task board's row, as one typed structure: ``BoardEntry`` is what the board computes
(``boards.leaderboard_rows``), what is stored (``store``), what the API serializes
(``serializers.LeaderboardRowSerializer``, whose fields a test holds equal to these) and what
the CSV export writes. ``ROW_SHAPE`` names its fields: stored boards carry it in their stamp, so
a release that changes the row rebuilds them (``manage.py rebuild_boards`` does it at once)."""
import hashlib
from dataclasses import asdict, dataclass, fields
from typing import Any

from benchmark.models import ReportedResult, Task
from submissions.models import BASELINES_USERNAME, DevSetUse, Status, Submission


@dataclass
class BoardEntry:
    method: str
    team: str
    date: str | None
    url: str
    scores: dict[str, Any]
    ci: dict[str, Any] | None
    reported: bool
    kind: str  # human, baseline (reported rows) or submission
    source: str = ""
    note: str = ""
    submission_id: int | None = None
    fails: int | None = None  # failed samples (kinds that count them)
    no_snr: int | None = None
    unranked_reason: str = ""
    baseline: bool = False
    system: str = ""
    verified: bool = False
    stale: bool = False  # scored by an older scorer than the task's: shown, marked, until re-scored
    rescoring: bool = False
    # Declarations at upload (ExpMRC's policy): dev-set use marks the row, the rest is shown.
    dev_set_use: str = DevSetUse.NONE
    external_data: str = ""
    code_url: str = ""
    paper_url: str = ""
    phase: str = ""  # the phase the entry was uploaded in (tasks with phases)
    # Filled when the board is ranked.
    rank: int | None = None
    tier: int | None = None
    p_vs_above: float | None = None
    p_vs_leader: float | None = None
    p_adjusted: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def reported_row(cls, reported: ReportedResult) -> "BoardEntry":
        return cls(method=reported.method, team=reported.team,
                   date=reported.date.isoformat() if reported.date else None, url=reported.url,
                   scores=reported.scores, ci=None, reported=True, kind=reported.kind, source=reported.source,
                   note=reported.note, baseline=reported.kind == ReportedResult.BASELINE, system=reported.method)

    @classmethod
    def submission_row(cls, task: Task, sub: Submission, *, stale: bool) -> "BoardEntry":
        details = sub.details or {}
        return cls(method=sub.method_name, team=sub.team,
                   date=sub.finished_at.date().isoformat() if sub.finished_at else None, url=sub.url,
                   scores=sub.scores, ci=sub.ci, reported=False, kind="submission", submission_id=sub.pk,
                   fails=details.get("quackie", {}).get("fails"), no_snr=details.get("quackie", {}).get("no_snr"),
                   unranked_reason=task.kind_definition.unranked_reason(details),
                   baseline=sub.user.username == BASELINES_USERNAME, system=sub.system,
                   verified=sub.verified_at is not None, stale=stale, rescoring=sub.status != Status.SCORED,
                   dev_set_use=sub.dev_set_use, external_data=sub.external_data, code_url=sub.code_url,
                   paper_url=sub.paper_url, phase=sub.phase.name if sub.phase is not None else "")


ROW_FIELDS = tuple(f.name for f in fields(BoardEntry))
ROW_SHAPE = hashlib.sha1(",".join(ROW_FIELDS).encode()).hexdigest()[:8]
