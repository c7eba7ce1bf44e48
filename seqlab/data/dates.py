"""Date normalisation: a date written in one of many English and Chinese formats → ISO ``YYYY-MM-DD``.

Both sides are characters (:func:`~seqlab.data.vocab.char_tokens`). Used in chapters 3 and 4.
"""

import random
from collections.abc import Iterable
from datetime import date

from seqlab.core.checks import check_at_least_one
from seqlab.data.vocab import char_tokens

MONTHS = tuple("January February March April May June July August September October November December".split())
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")  # date.weekday() order
ZH_DIGITS = "〇一二三四五六七八九"
ZH_WEEKDAYS = ("星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期日")


def chinese_number(value: int) -> str:
    """Write 1..99 in Chinese numerals: 9 → 九, 10 → 十, 11 → 十一, 20 → 二十, 31 → 三十一."""
    if not 1 <= value <= 99:
        raise ValueError(f"chinese_number writes 1..99, got {value}")
    tens, ones = divmod(value, 10)
    if tens == 0:
        return ZH_DIGITS[ones]
    # "十" alone means ten; a leading "一" is dropped (十一, not 一十一); a trailing zero is silent.
    return (ZH_DIGITS[tens] if tens > 1 else "") + "十" + (ZH_DIGITS[ones] if ones else "")


def chinese_year(year: int) -> str:
    """Write a year digit by digit, as Chinese dates do: 2026 → 二〇二六."""
    return "".join(ZH_DIGITS[int(digit)] for digit in str(year))


def _ordinal(day: int) -> str:
    suffix = "th" if 11 <= day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


# Every format says which number is the day: month names, year first, or day-first numerals only
# (there is deliberately no month-first "11/30/2026", which would make "01/02/2026" ambiguous).
# Years are always four digits. The year is the calendar year (date.year), never a week-based one.
_DATE_FORMATTERS = {
    "day_mon_year": lambda d: f"{d.day} {MONTHS[d.month - 1][:3]} {d.year}",  # 30 Nov 2026
    "day_month_year": lambda d: f"{d.day} {MONTHS[d.month - 1]} {d.year}",  # 30 November 2026
    "month_day_year": lambda d: f"{MONTHS[d.month - 1]} {d.day}, {d.year}",  # November 30, 2026
    "mon_day_year": lambda d: f"{MONTHS[d.month - 1][:3]} {d.day}, {d.year}",  # Nov 30, 2026
    "lower_day_mon_year": lambda d: f"{d.day} {MONTHS[d.month - 1][:3].lower()} {d.year}",  # 30 nov 2026
    "ordinal": lambda d: f"the {_ordinal(d.day)} of {MONTHS[d.month - 1]} {d.year}",  # the 30th of November 2026
    "weekday_day_month_year": lambda d: f"{WEEKDAYS[d.weekday()]}, {d.day} {MONTHS[d.month - 1]} {d.year}",
    "wkd_mon_day_year": lambda d: f"{WEEKDAYS[d.weekday()][:3]}, {MONTHS[d.month - 1][:3]} {d.day}, {d.year}",
    "dd/mm/yyyy": lambda d: f"{d.day:02d}/{d.month:02d}/{d.year}",  # 30/11/2026
    "dd.mm.yyyy": lambda d: f"{d.day:02d}.{d.month:02d}.{d.year}",  # 30.11.2026
    "yyyy.mm.dd": lambda d: f"{d.year}.{d.month:02d}.{d.day:02d}",  # 2026.11.30
    "zh": lambda d: f"{d.year}年{d.month}月{d.day}日",  # 2026年11月30日
    "zh_weekday": lambda d: f"{d.year}年{d.month}月{d.day}日 {ZH_WEEKDAYS[d.weekday()]}",  # 2026年11月30日 星期一
    "zh_numerals": lambda d: f"{chinese_year(d.year)}年{chinese_number(d.month)}月{chinese_number(d.day)}日",
}
DATE_FORMATS = tuple(_DATE_FORMATTERS)  # the format names, for format_date and date_task(formats=...)


def format_date(day: date, fmt_name: str) -> str:
    """Write ``day`` in the named format, e.g. ``format_date(date(2026, 11, 30), "zh")`` → ``"2026年11月30日"``.

    Locale-free: month and weekday names come from this module, not from ``strftime``.

    Used in chapters 3 and 4.
    """
    if fmt_name not in _DATE_FORMATTERS:
        raise ValueError(f"unknown date format {fmt_name!r}; choose one of {list(DATE_FORMATS)}")
    return _DATE_FORMATTERS[fmt_name](day)


def iso_date(day: date) -> str:
    """The target side: ``YYYY-MM-DD`` with the calendar year (``date.year``, not ``isocalendar()``'s)."""
    return f"{day.year:04d}-{day.month:02d}-{day.day:02d}"


def date_task(
    n: int,
    seed: int = 0,
    start: date = date(1950, 1, 1),
    end: date = date(2050, 12, 31),
    formats: Iterable[str] | None = None,
) -> list[tuple[list[str], list[str]]]:
    """Dates written in many ways, to be normalised to ISO ``YYYY-MM-DD``.

    Each pair draws a day uniformly from ``[start, end]`` and a format uniformly from ``formats``
    (default: all of :data:`DATE_FORMATS`). Both sides are lists of characters (:func:`char_tokens`),
    spaces as :data:`SPACE_TOKEN`.

    Example::

        >>> src, tgt = date_task(1, formats=["zh"])[0]
        >>> "".join(tgt), "年" in src
        ('2019-02-15', True)

    Used in chapters 3 and 4.
    """
    check_at_least_one("n (the number of examples)", n)
    if start > end:
        raise ValueError(f"start ({start}) must not be after end ({end})")
    formats = list(DATE_FORMATS if formats is None else formats)
    for name in formats:
        if name not in _DATE_FORMATTERS:
            raise ValueError(f"unknown date format {name!r}; choose from {list(DATE_FORMATS)}")
    if not formats:
        raise ValueError("formats must name at least one format")
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        day = date.fromordinal(rng.randint(start.toordinal(), end.toordinal()))
        text = format_date(day, rng.choice(formats))
        pairs.append((char_tokens(text), char_tokens(iso_date(day))))
    return pairs
