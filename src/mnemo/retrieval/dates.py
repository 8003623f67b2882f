"""The times a query speaks of: "on 1 May, 2022", "in August 2023", "in 2023", "in July", "last week".

A question that names a time is usually about what was written down then, so recall favours memories
(and messages) created in that period. :func:`mentioned_periods` finds the periods in English text; it
never raises and never guesses beyond the patterns below. Dates are read in UTC, as the stores keep time.

What is recognised, each as a window of creation times:

* a day: ``1 May, 2022``, ``May 1st 2022``, ``the 3rd of March 2021``, ``2022-05-01``;
* a month of a year: ``August 2023``, ``Aug. 2023``;
* a year: ``2023`` (1900-2099, standing alone);
* a month of any year: ``in July`` (``may`` only where it cannot be the verb: ``in May``, ``May 3``);
* relative to now: ``today``, ``yesterday``, ``this``/``last`` ``week``/``month``/``year``, ``N days ago``,
  ``N weeks ago``, ``a week ago``.

Things are often written down a few days after they happen ("last weekend I went camping"), so every
window reaches :data:`LATE_DAYS` past its period, and a day's window starts a day early for time zones.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

LATE_DAYS = 7
_DAY = timedelta(days=1)
_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): number for number, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_MONTH = r"(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
_ORDINAL = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "ten": 10}
_PATTERNS = (  # most specific first: a span taken by one is not read again by a later one
    ("day", re.compile(rf"\b{_ORDINAL}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b")),
    ("month_day", re.compile(rf"\b{_MONTH}\s+{_ORDINAL},?\s+{_YEAR}\b")),
    ("iso", re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")),
    ("month_year", re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b")),
    ("year", re.compile(rf"(?<![\d.:/-]){_YEAR}(?![\d.:/%-]|\s*(?:am|pm)\b)")),
    ("relative", re.compile(r"\b(today|yesterday|(?:this|last|past) (?:week|month|year))\b")),
    ("ago", re.compile(r"\b(a|one|two|three|four|five|six|seven|ten|\d{1,3}) (day|week)s? ago\b")),
    ("month", re.compile(rf"\b{_MONTH}(?!\w)")),
)
# "may" is a month only where a verb cannot stand: "in May", "May 3", "of May", "since May".
_MAY_AS_MONTH = re.compile(r"\b(?:in|of|since|until|during|early|late|mid|last|next|this) may\b|\bmay \d")


@dataclass(frozen=True, slots=True)
class Periods:
    """Windows of Unix times (``[start, end)``) and months of any year (1-12) that a query names."""

    windows: tuple[tuple[float, float], ...] = ()
    months: frozenset[int] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.windows or self.months)

    def contains(self, timestamp: float) -> bool:
        """Whether a memory created at ``timestamp`` falls in one of the periods."""
        if any(start <= timestamp < end for start, end in self.windows):
            return True
        if not self.months:
            return False
        moment = datetime.fromtimestamp(timestamp, UTC)
        # A month's window, like the others, runs LATE_DAYS into the next one.
        return moment.month in self.months or (moment - timedelta(days=LATE_DAYS)).month in self.months


def mentioned_periods(text: str, now: float) -> Periods:
    """The periods ``text`` names (see the module docstring); ``now`` anchors relative ones."""
    lowered = text.lower()
    taken: list[tuple[int, int]] = []
    windows: list[tuple[float, float]] = []
    months: set[int] = set()
    today = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(lowered):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            if kind == "month":
                word = match.group(1)
                if word == "may" and not _MAY_AS_MONTH.search(lowered, max(0, match.start() - 7), match.end() + 3):
                    continue
                months.add(_MONTHS[word])
            else:
                window = _window(kind, match.groups(), today)
                if window is None:
                    continue
                windows.append(window)
            taken.append(match.span())
    return Periods(tuple(windows), frozenset(months))


def _window(kind: str, groups: tuple[str, ...], today: datetime) -> tuple[float, float] | None:
    try:
        if kind in ("day", "month_day", "iso"):
            if kind == "day":
                day, month, year = int(groups[0]), _MONTHS[groups[1]], int(groups[2])
            elif kind == "month_day":
                month, day, year = _MONTHS[groups[0]], int(groups[1]), int(groups[2])
            else:
                year, month, day = int(groups[0]), int(groups[1]), int(groups[2])
            start = datetime(year, month, day, tzinfo=UTC)
            return _late(start - _DAY, start + _DAY)
        if kind == "month_year":
            month, year = _MONTHS[groups[0]], int(groups[1])
            return _late(datetime(year, month, 1, tzinfo=UTC), _next_month(year, month))
        if kind == "year":
            year = int(groups[0])
            return _late(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))
    except ValueError:  # 31 February and the like: not a date
        return None
    if kind == "relative":
        return _relative(groups[0], today)
    count = _NUMBERS.get(groups[0]) or int(groups[0])
    step = timedelta(days=count if groups[1] == "day" else 7 * count)
    # "three days ago": that day, give or take one; "two weeks ago": that week, give or take a few days.
    margin = _DAY if groups[1] == "day" else timedelta(days=4)
    return ((today - step - margin).timestamp(), (today - step + _DAY + margin).timestamp())


def _relative(phrase: str, today: datetime) -> tuple[float, float]:
    tomorrow = today + _DAY
    if phrase == "today":
        return (today - _DAY).timestamp(), tomorrow.timestamp()
    if phrase == "yesterday":
        return (today - 2 * _DAY).timestamp(), tomorrow.timestamp()
    unit = phrase.split()[1]
    if unit == "week":
        monday = today - timedelta(days=today.weekday())
        if phrase.startswith("this"):
            return monday.timestamp(), tomorrow.timestamp()
        return (monday - timedelta(days=7)).timestamp(), tomorrow.timestamp()
    if unit == "month":
        first = today.replace(day=1)
        if phrase.startswith("this"):
            return first.timestamp(), tomorrow.timestamp()
        previous = (first - _DAY).replace(day=1)
        return previous.timestamp(), tomorrow.timestamp()
    first = today.replace(month=1, day=1)
    if phrase.startswith("this"):
        return first.timestamp(), tomorrow.timestamp()
    return first.replace(year=first.year - 1).timestamp(), tomorrow.timestamp()


def _next_month(year: int, month: int) -> datetime:
    return datetime(year + 1, 1, 1, tzinfo=UTC) if month == 12 else datetime(year, month + 1, 1, tzinfo=UTC)


def _late(start: datetime, end: datetime) -> tuple[float, float]:
    return start.timestamp(), (end + timedelta(days=LATE_DAYS)).timestamp()
